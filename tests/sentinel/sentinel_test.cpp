// fencelock through redis-sentinel:// against a real Sentinel group (master, replica, three
// sentinels): discovery, a clear error for a sentinel behind redis://, following a graceful
// failover, the CLI; and replicated Redis's refusals classified as retryable.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <string>

#include "fencelock/client.hpp"
#include "local_servers/child_process.hpp"
#include "local_servers/redis_server.hpp"
#include "sentinel/sentinel_fixture.hpp"
#include "support/eventually.hpp"

namespace fencelock::test_support {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

// The group outlives a test process: names carry the pid so reruns never meet old keys.
ResourceName resource(const std::string& name) {
    return *ResourceName::make("sentinel:" + std::to_string(::getpid()) + ":" + name);
}

LockClient client_for(const RedisEndpoint& endpoint) {
    auto c = LockClient::create({.endpoint = endpoint});
    EXPECT_TRUE(c.has_value());
    return std::move(*c);
}

TEST(Sentinel, AcquireRenewReleaseThroughTheSentinelUrl) {
    auto& group = SharedSentinelGroup::get();
    auto c = client_for(group.endpoint());
    const auto r = resource("round-trip");
    auto got = c.try_acquire(r, {.lease = 5s});
    ASSERT_TRUE(got && got->acquired()) << (got ? "contended" : got.error().message());
    const Lease& lease = *got->lease;
    // The lease is on the master the sentinels name.
    EXPECT_EQ(group.master_cli({"GET", "fence:{" + r.str() + "}"}), std::to_string(lease.fence.value()));
    EXPECT_EQ(group.master_cli({"EXISTS", "lock:{" + r.str() + "}"}), "1");
    auto renewed = c.renew(r, lease.owner, 5s);
    ASSERT_TRUE(renewed) << renewed.error().message();
    EXPECT_EQ(renewed->status, RenewStatus::renewed);
    auto released = c.release(r, lease.owner);
    ASSERT_TRUE(released) << released.error().message();
    EXPECT_EQ(*released, ReleaseStatus::released);
}

TEST(Sentinel, ARedisUrlNamingASentinelFailsWithAClearError) {
    auto& group = SharedSentinelGroup::get();
    const auto& sentinel = group.endpoint().sentinels.front();
    auto c = client_for(*parse_redis_url("redis://" + sentinel.host + ":" + std::to_string(sentinel.port)));
    auto got = c.try_acquire(resource("wrong-url"), {.lease = 5s});
    ASSERT_FALSE(got.has_value());
    EXPECT_EQ(got.error(), errc::is_sentinel) << got.error().message();
    EXPECT_EQ(classify(got.error()), failure_kind::fatal);
    EXPECT_NE(got.error().message().find("redis-sentinel://"), std::string::npos);
}

TEST(Sentinel, KeptLeaseIsStillRenewedAfterAGracefulFailover) {
    auto& group = SharedSentinelGroup::get();
    auto c = client_for(group.endpoint());
    const auto r = resource("kept");
    auto held = c.hold(r, {.lease = 3s});
    ASSERT_TRUE(held && held->acquired()) << (held ? "contended" : held.error().message());
    HeldLease& lease = *held->lease;
    ASSERT_TRUE(eventually([&] { return lease.renewals() >= 1; }, 10s));
    // Wait until the replica has the lease, so the promoted replica holds it too.
    const std::string key = "lock:{" + r.str() + "}";
    ASSERT_EQ(group.master_cli({"WAIT", "1", "5000"}), "1");

    const std::uint16_t old_master = group.master_port();
    const std::uint16_t new_master = group.fail_over();
    ASSERT_NE(new_master, old_master);

    // Renewals go on through the new master: its copy of the lease is renewed (its TTL keeps
    // being pushed back), the fence never changes, the lease is never lost.
    const auto renewals_at_failover = lease.renewals();
    ASSERT_TRUE(eventually([&] { return lease.renewals() >= renewals_at_failover + 3; }, 20s))
        << "renewals: " << lease.renewals() << " lost: " << c.keeper_stats().leases_lost;
    EXPECT_TRUE(lease.valid());
    EXPECT_EQ(c.keeper_stats().leases_lost, 0u);
    EXPECT_EQ(local::cli_at(new_master, {"EXISTS", key}), "1");
    EXPECT_EQ(local::cli_at(new_master, {"GET", "fence:{" + r.str() + "}"}), std::to_string(lease.fence().value()));
    auto info = c.inspect(r);
    ASSERT_TRUE(info && info->holder) << (info ? "no holder" : info.error().message());
    EXPECT_EQ(info->holder->fence, lease.fence());

    // A new acquire works and lands on the new master (once its failover grace is over).
    const auto other = resource("after-failover");
    auto got = c.acquire(other, {.lease = 5s, .wait = test_failover_grace + 10s});
    ASSERT_TRUE(got && got->acquired()) << (got ? "contended" : got.error().message());
    EXPECT_EQ(local::cli_at(new_master, {"EXISTS", "lock:{" + other.str() + "}"}), "1");
    EXPECT_TRUE(c.release(other, got->lease->owner));
}

TEST(Sentinel, CliAcquireAndRunThroughTheSentinelUrl) {
    auto& group = SharedSentinelGroup::get();
    const std::string name = "sentinel:" + std::to_string(::getpid()) + ":cli";
    auto acquired = local::run_process({FENCELOCK_CLI, "--redis", group.url(), "acquire", name, "--lease", "30s"});
    ASSERT_EQ(acquired.exit_code, 0) << acquired.err;
    const json a = json::parse(acquired.out);
    EXPECT_EQ(a["acquired"], true);
    auto released = local::run_process(
        {FENCELOCK_CLI, "--redis", group.url(), "release", name, "--owner", a["owner"].get<std::string>()});
    EXPECT_EQ(released.exit_code, 0) << released.err;

    // run, with the URL from the environment as operators set it.
    auto ran = local::run_process({FENCELOCK_CLI, "run", name + ":run", "--lease", "5s", "--", "sh", "-c", "exit 7"},
                                  {"FENCELOCK_REDIS_URL=" + group.url()});
    EXPECT_EQ(ran.exit_code, 7) << ran.err;
    EXPECT_EQ(ran.out, "") << "stdout is CMD's; run's summary is stderr's last line";
    const std::string last = ran.err.substr(ran.err.rfind('{'));
    const json summary = json::parse(last);
    EXPECT_EQ(summary["acquired"], true);
    EXPECT_EQ(summary["released"], true);
}

TEST(ReplicatedRedis, NoreplicasIsRetryableNamedAndWritesNothing) {
    // A master that may not write without a replica in sync, and has none.
    local::RedisServer redis({"--min-replicas-to-write", "1", "--min-replicas-max-lag", "10"});
    auto c = client_for(*parse_redis_url(redis.url()));
    auto got = c.try_acquire(*ResourceName::make("noreplicas"), {.lease = 5s});
    ASSERT_FALSE(got.has_value());
    EXPECT_EQ(got.error(), errc::replicas_unavailable) << got.error().message();
    EXPECT_EQ(classify(got.error()), failure_kind::retryable);
    EXPECT_NE(got.error().message().find("NOREPLICAS"), std::string::npos);
    EXPECT_EQ(got.error().message().find("unexpected type"), std::string::npos);
    EXPECT_EQ(redis.cli({"DBSIZE"}), "0") << "the refusal must come before any write";
}

}  // namespace
}  // namespace fencelock::test_support
