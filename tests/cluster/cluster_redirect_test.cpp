// Slots moving under a client that already learned the map: MOVED after a slot changed
// master, ASK while it is being migrated. The client follows both with the same owner token,
// the lease survives the move (its keys move with the slot), and fences keep increasing.
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "cluster/cluster_fixture.hpp"
#include "cluster/cluster_reshard.hpp"
#include "fencelock/async_client.hpp"
#include "fencelock/client.hpp"
#include "local_servers/cluster_group.hpp"
#include "local_servers/sentinel_group.hpp"
#include "redis/cluster_slot.hpp"
#include "support/async_round_trip.hpp"
#include "support/eventually.hpp"

namespace fencelock::test_support {
namespace {

using namespace std::chrono_literals;

// Whether the lease's lock and fence keys are both on the master at `port`.
bool lease_keys_on(std::uint16_t port, const ResourceName& r) {
    return local::cli_at(port, {"EXISTS", "lock:{" + r.str() + "}", "fence:{" + r.str() + "}"}) == "2";
}

TEST(ClusterRedirect, MovedAfterTheSlotChangedMasterIsFollowedAndTheLeaseKept) {
    auto& cluster = SharedCluster::get();
    const auto masters = local::master_ports(cluster.ports().front());
    const auto r = resource_on(masters[0], "moved");
    SlotHome home{cluster.ports(), slot_of(r), masters[0]};
    auto c = client_for(cluster.url());
    auto got = c.try_acquire(r, {.lease = 30s});
    ASSERT_TRUE(got && got->acquired()) << (got ? "contended" : got.error().message());
    const Lease lease = *got->lease;

    const std::uint16_t target = other_master(masters[0]);
    local::SlotMigration move(cluster.ports(), slot_of(r), target);
    move.begin();
    // Other tests of the run may have left keys (fence counters) in this slot: they move too.
    EXPECT_GE(move.move_keys(), 2);
    move.finish();
    EXPECT_TRUE(lease_keys_on(target, r));

    // The client still maps the slot to the old master, which now answers MOVED.
    auto renewed = c.renew(r, lease.owner, 30s);
    ASSERT_TRUE(renewed) << renewed.error().message();
    EXPECT_EQ(renewed->status, RenewStatus::renewed);
    EXPECT_EQ(local::cli_at(target, {"EXISTS", "lock:{" + r.str() + "}"}), "1");
    auto contended = c.try_acquire(r, {.lease = 30s});
    ASSERT_TRUE(contended.has_value()) << contended.error().message();
    EXPECT_FALSE(contended->acquired());  // the moved lease still excludes others
    auto released = c.release(r, lease.owner);
    ASSERT_TRUE(released) << released.error().message();
    EXPECT_EQ(*released, ReleaseStatus::released);
    auto next = c.try_acquire(r, {.lease = 30s});
    ASSERT_TRUE(next && next->acquired()) << (next ? "contended" : next.error().message());
    EXPECT_GT(next->lease->fence.value(), lease.fence.value());
    (void)c.release(r, next->lease->owner);
}

// The async client runs the sync path's cluster connection: its renew follows the MOVED too.
TEST(ClusterRedirect, AsyncOperationsFollowMovedToo) {
    auto& cluster = SharedCluster::get();
    const auto masters = local::master_ports(cluster.ports().front());
    const auto r = resource_on(masters[0], "async-moved");
    SlotHome home{cluster.ports(), slot_of(r), masters[0]};
    auto c = AsyncLockClient::create({.endpoint = *parse_redis_url(cluster.url())});
    ASSERT_TRUE(c.has_value());
    auto [acquired, got] = promised<Acquisition>();
    c->try_acquire(r, {.lease = 30s}, std::move(acquired));
    auto lease = got.get();
    ASSERT_TRUE(lease && lease->acquired()) << (lease ? "contended" : lease.error().message());

    const std::uint16_t target = other_master(masters[0]);
    local::SlotMigration move(cluster.ports(), slot_of(r), target);
    move.begin();
    EXPECT_GE(move.move_keys(), 2);
    move.finish();

    renew_then_release_async(*c, r, lease->lease->owner, 30s);  // the renew meets the MOVED
    EXPECT_EQ(local::cli_at(target, {"EXISTS", "lock:{" + r.str() + "}"}), "0");
}

// Redis's rule during a migration (cluster.c, getNodeByQuery): the source serves a command
// whose keys it all has, and answers ASK when a key is missing; the target, after ASKING,
// serves a single-key command, and answers TRYAGAIN to a multi-key one with missing keys
// until the slot is assigned. acquire names five keys (some, like the fair line, usually
// absent), so a fresh acquire waits out the migration; renew names one.
TEST(ClusterRedirect, DuringAMigrationAskIsFollowedAndAcquireWaitsOutTryagain) {
    auto& cluster = SharedCluster::get();
    const auto masters = local::master_ports(cluster.ports().front());
    const auto held = resource_on(masters[1], "ask-held");
    const auto fresh = in_slot_of(held, "cluster:ask-fresh:", 2)[1];
    SlotHome home{cluster.ports(), slot_of(held), masters[1]};
    auto c = client_for(cluster.url());
    auto lease = c.try_acquire(held, {.lease = 30s});
    ASSERT_TRUE(lease && lease->acquired());

    const std::uint16_t target = other_master(masters[1]);
    local::SlotMigration move(cluster.ports(), slot_of(held), target);
    move.begin();
    EXPECT_GE(move.move_keys(), 2);  // and any keys other tests left in the slot
    // The target answers MOVED to a plain EXISTS until the slot is its own: count there.
    EXPECT_EQ(local::cli_at(masters[1], {"CLUSTER", "COUNTKEYSINSLOT", std::to_string(slot_of(held))}), "0");
    // The keys are on the target, the slot still the source's: ASK, then ASKING + renew there.
    auto renewed = c.renew(held, lease->lease->owner, 30s);
    ASSERT_TRUE(renewed) << renewed.error().message();
    EXPECT_EQ(renewed->status, RenewStatus::renewed);

    const auto tryagain_before = error_count(target, "TRYAGAIN");
    Result<Acquisition> got = std::unexpected(make_error_code(errc::unavailable));
    std::thread contender([&] { got = c.acquire(fresh, {.lease = 30s, .wait = 30s}); });
    const bool refused = eventually([&] { return error_count(target, "TRYAGAIN") > tryagain_before; }, 20s);
    move.finish();  // the slot is the target's: the next resend is MOVED there and runs
    contender.join();
    ASSERT_TRUE(refused) << "the target never answered TRYAGAIN";
    ASSERT_TRUE(got && got->acquired()) << (got ? "contended" : got.error().message());
    EXPECT_EQ(local::cli_at(target, {"EXISTS", "lock:{" + fresh.str() + "}"}), "1");
    for (const auto* a : {&*lease, &*got}) {
        auto released = c.release(a->lease->resource, a->lease->owner);
        ASSERT_TRUE(released) << released.error().message();
        EXPECT_EQ(*released, ReleaseStatus::released);
    }
}

}  // namespace
}  // namespace fencelock::test_support
