// AsyncLockClient through redis-sentinel://: its operations take the sync path's topology
// (sentinel discovery, the failover-grace check), so a round trip lands on the named master.
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "fencelock/async_client.hpp"
#include "sentinel/sentinel_fixture.hpp"
#include "support/async_round_trip.hpp"

namespace fencelock::test_support {
namespace {

using namespace std::chrono_literals;

TEST(Sentinel, AsyncAcquireRenewReleaseThroughTheSentinelUrl) {
    auto& group = SharedSentinelGroup::get();
    auto c = AsyncLockClient::create({.endpoint = group.endpoint()});
    ASSERT_TRUE(c.has_value());
    const auto r = *ResourceName::make("sentinel:" + std::to_string(::getpid()) + ":async");

    auto [acquired, got] = promised<Acquisition>();
    c->acquire(r, {.lease = 5s, .wait = 2s}, std::move(acquired));
    auto lease = got.get();
    ASSERT_TRUE(lease && lease->acquired()) << (lease ? "contended" : lease.error().message());
    EXPECT_EQ(group.master_cli({"GET", "fence:{" + r.str() + "}"}), std::to_string(lease->lease->fence.value()));

    renew_then_release_async(*c, r, lease->lease->owner, 5s);
    EXPECT_EQ(group.master_cli({"EXISTS", "lock:{" + r.str() + "}"}), "0");
}

}  // namespace
}  // namespace fencelock::test_support
