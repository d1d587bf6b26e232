// Release notifications on a cluster: sharded pub/sub (SSUBSCRIBE / SPUBLISH) on the master
// that owns the resource's slot. A waiter in one client is woken by another client's release
// by message (a minute of backoff and a minute of lease left: nothing else could wake it within
// the test's patience), the message reaches only the slot's shard, and the subscription
// follows the slot when it is migrated.
#include <gtest/gtest.h>

#include <future>
#include <map>
#include <string>

#include "cluster/cluster_fixture.hpp"
#include "coordinator/redis/release_notifier.hpp"
#include "local_servers/cluster_group.hpp"
#include "local_servers/sentinel_group.hpp"
#include "support/eventually.hpp"

namespace fencelock::test_support {
namespace {

using namespace std::chrono_literals;

constexpr BackoffPolicy sleepy{.base = 60s, .max = 60s};

std::string channel(const ResourceName& r) { return "released:{" + r.str() + "}"; }

// A number from a "name:value" (or "name:calls=value,...") line of INFO or CLUSTER INFO; 0 when
// the line is absent (Redis lists a command or message type only once it was counted).
long stat(std::uint16_t port, const std::vector<std::string>& command, const std::string& name) {
    const std::string text = local::cli_at(port, command);
    const auto at = text.find(name + ":");
    if (at == std::string::npos) return 0;
    std::size_t value = at + name.size() + 1;
    if (text.compare(value, 6, "calls=") == 0) value += 6;
    return std::stol(text.substr(value));
}
long spublishes(std::uint16_t port) { return stat(port, {"INFO", "commandstats"}, "cmdstat_spublish"); }
long script_calls(std::uint16_t port) {
    return stat(port, {"INFO", "commandstats"}, "cmdstat_evalsha") +
           stat(port, {"INFO", "commandstats"}, "cmdstat_eval");
}
// Publish messages a node received over the cluster bus, classic and sharded.
long bus_publishes(std::uint16_t port) {
    return stat(port, {"CLUSTER", "INFO"}, "cluster_stats_messages_publish_received") +
           stat(port, {"CLUSTER", "INFO"}, "cluster_stats_messages_publishshard_received");
}
// SSUBSCRIBEs the node at `port` answered with a redirect instead of running them.
long rejected_ssubscribes(std::uint16_t port) {
    const std::string text = local::cli_at(port, {"INFO", "commandstats"});
    const auto at = text.find("cmdstat_ssubscribe:");
    if (at == std::string::npos) return 0;
    const std::string field = "rejected_calls=";
    return std::stol(text.substr(text.find(field, at) + field.size()));
}
// Sharded subscribers of `r`'s channel on the node at `port` (its own, not the cluster's).
long shard_subscribers(std::uint16_t port, const ResourceName& r) {
    const std::string out = local::cli_at(port, {"PUBSUB", "SHARDNUMSUB", channel(r)});
    return std::stol(out.substr(out.find('\n') + 1));
}

// The masters serving slots now (three in the fixture's cluster).
std::vector<std::uint16_t> masters_now() { return local::master_ports(SharedCluster::get().ports().front()); }

// Moves `slot` back to `home` for the tests after this one, and waits until all nodes agree.
void migrate_home(const std::vector<std::uint16_t>& ports, std::uint16_t slot, std::uint16_t home) {
    local::SlotMigration back(ports, slot, home);
    back.begin();
    back.move_keys();
    back.finish();
    ASSERT_TRUE(eventually([&] { return local::cluster_ready(ports, 3); }, 30s));
}

std::future<Result<Acquisition>> start_waiting(LockClient& c, const ResourceName& r) {
    return std::async(std::launch::async,
                      [&c, r] { return c.acquire(r, {.lease = 10s, .wait = 120s, .backoff = sleepy}); });
}

TEST(ClusterNotify, AReleaseWakesAWaiterInAnotherClientByAMessageOnlyTheSlotsShardSees) {
    auto& cluster = SharedCluster::get();
    const auto masters = masters_now();
    ASSERT_EQ(masters.size(), 3u);
    const std::uint16_t owner = masters[1];
    const auto r = resource_on(owner, "wake");
    // The waiter's client knows only another master as seed: it must find the slot's node.
    auto holder_client = client_for(cluster.url());
    auto waiter_client = client_for(cluster.url_with_seed(masters[0]));
    auto held = holder_client.try_acquire(r, {.lease = 60s});
    ASSERT_TRUE(held && held->acquired());

    std::map<std::uint16_t, long> spublish_before, bus_before;
    for (auto p : cluster.ports()) {
        spublish_before[p] = spublishes(p);
        bus_before[p] = bus_publishes(p);
    }
    const long calls_before = script_calls(owner);
    auto waiting = start_waiting(waiter_client, r);
    // Subscribed on the slot's master only, and the attempt sent after the confirmation is in:
    // one refused attempt, one more once subscribed. From here no release can go unseen.
    ASSERT_TRUE(
        eventually([&] { return shard_subscribers(owner, r) == 1 && script_calls(owner) == calls_before + 2; }));
    for (auto p : masters)
        if (p != owner) EXPECT_EQ(shard_subscribers(p, r), 0) << "subscribed on " << p;

    ASSERT_TRUE(holder_client.release(r, held->lease->owner));
    // Far below the minute the waiter's own timers would take: only the message can wake it.
    ASSERT_EQ(waiting.wait_for(30s), std::future_status::ready) << "the release did not wake the waiter";
    auto got = waiting.get();
    ASSERT_TRUE(got && got->acquired()) << (got ? "not acquired" : got.error().message());
    // The release granted the lock to the waiter's place and said so in its message: the
    // waiter owns it without a third attempt (its two refused ones are all it made).
    EXPECT_EQ(got->attempts, 2u);
    EXPECT_EQ(got->unsuccessful_attempts, 2u);
    EXPECT_GT(got->lease->fence, held->lease->fence);

    // One SPUBLISH, run by the release script on the slot's master. The other masters heard
    // nothing of it: no publish of either kind reached them over the cluster bus (a classic
    // PUBLISH is broadcast to every node).
    EXPECT_EQ(spublishes(owner), spublish_before[owner] + 1);
    for (auto p : masters) {
        if (p == owner) continue;
        EXPECT_EQ(spublishes(p), spublish_before[p]) << "node " << p;
        EXPECT_EQ(bus_publishes(p), bus_before[p]) << "node " << p << " was sent the release";
    }
    EXPECT_TRUE(waiter_client.release(r, got->lease->owner));
    EXPECT_TRUE(eventually([&] { return shard_subscribers(owner, r) == 0; }))
        << "the waiter left its channel subscribed";
}

TEST(ClusterNotify, TheSubscriptionFollowsAMigratedSlotAndALaterReleaseStillWakesByMessage) {
    auto& cluster = SharedCluster::get();
    const auto ports = cluster.ports();
    const auto masters = masters_now();
    ASSERT_EQ(masters.size(), 3u);
    const std::uint16_t from = masters[0], to = masters[2];
    const auto r = resource_on(from, "follow");
    const std::uint16_t slot = slot_of(r);
    auto holder_client = client_for(cluster.url());
    auto waiter_client = client_for(cluster.url());
    auto held = holder_client.try_acquire(r, {.lease = 60s});
    ASSERT_TRUE(held && held->acquired());

    const auto waits_before = detail::ReleaseNotifier::waits_begun();
    auto waiting = start_waiting(waiter_client, r);
    ASSERT_TRUE(eventually([&] { return detail::ReleaseNotifier::waits_begun() == waits_before + 1; }));
    EXPECT_EQ(shard_subscribers(from, r), 1);

    // The slot moves, the lease with it (MIGRATE keeps its TTL). Assigning the slot makes the
    // old master drop the subscription (its own `sunsubscribe`); the waiter looks once more
    // and the notifier subscribes on the new master.
    local::SlotMigration move(ports, slot, to);
    move.begin();
    ASSERT_GE(move.move_keys(), 2);  // the lease and its fence counter
    move.finish();
    ASSERT_TRUE(eventually([&] { return shard_subscribers(to, r) == 1; })) << "the subscription did not follow";
    EXPECT_EQ(shard_subscribers(from, r), 0);
    // Woken by the drop, the waiter looked again and, subscribed again, waits for a release.
    // (Whether its look was sent before or after the new subscription was confirmed, only the
    // client can tell: hence the notifier's count.)
    ASSERT_TRUE(eventually([&] { return detail::ReleaseNotifier::waits_begun() == waits_before + 2; }))
        << "the waiter did not wait again";
    EXPECT_NE(waiting.wait_for(0s), std::future_status::ready);

    const long spublish_before = spublishes(to);
    ASSERT_TRUE(holder_client.release(r, held->lease->owner));
    ASSERT_EQ(waiting.wait_for(30s), std::future_status::ready) << "the release after the migration went unseen";
    auto got = waiting.get();
    ASSERT_TRUE(got && got->acquired()) << (got ? "not acquired" : got.error().message());
    EXPECT_GT(got->lease->fence, held->lease->fence);
    EXPECT_EQ(spublishes(to), spublish_before + 1);
    EXPECT_TRUE(waiter_client.release(r, got->lease->owner));

    migrate_home(ports, slot, from);
}

// A subscriber whose slot map is out of date sends SSUBSCRIBE to the old owner, which answers
// MOVED: the map learns it and the subscription goes to the named master.
TEST(ClusterNotify, ASubscriptionSentByAnOldMapFollowsMovedToTheSlotsMaster) {
    auto& cluster = SharedCluster::get();
    const auto ports = cluster.ports();
    const auto masters = masters_now();
    ASSERT_EQ(masters.size(), 3u);
    const std::uint16_t from = masters[1], to = masters[0];
    const auto first = resource_on(masters[2], "map-loaded");
    const auto r = resource_on(from, "moved");
    auto holder_client = client_for(cluster.url());
    auto waiter_client = client_for(cluster.url());
    auto held_first = holder_client.try_acquire(first, {.lease = 60s});
    auto held = holder_client.try_acquire(r, {.lease = 60s});
    ASSERT_TRUE(held_first && held_first->acquired() && held && held->acquired());

    // A first waiter makes the waiter client's notifier load its slot map.
    const auto waits_before = detail::ReleaseNotifier::waits_begun();
    auto waiting_first = start_waiting(waiter_client, first);
    ASSERT_TRUE(eventually([&] { return detail::ReleaseNotifier::waits_begun() == waits_before + 1; }));
    // r's slot moves while nobody listens there: no node tells the notifier.
    local::SlotMigration move(ports, slot_of(r), to);
    move.begin();
    ASSERT_GE(move.move_keys(), 2);
    move.finish();
    const long rejected_before = rejected_ssubscribes(from);

    auto waiting = start_waiting(waiter_client, r);
    ASSERT_TRUE(eventually([&] { return detail::ReleaseNotifier::waits_begun() == waits_before + 2; }));
    EXPECT_EQ(shard_subscribers(to, r), 1);
    EXPECT_EQ(shard_subscribers(from, r), 0);
    EXPECT_EQ(rejected_ssubscribes(from), rejected_before + 1) << "the old owner was not asked first (MOVED)";

    ASSERT_TRUE(holder_client.release(r, held->lease->owner));
    ASSERT_EQ(waiting.wait_for(30s), std::future_status::ready) << "the release went unseen";
    auto got = waiting.get();
    ASSERT_TRUE(got && got->acquired()) << (got ? "not acquired" : got.error().message());
    EXPECT_TRUE(waiter_client.release(r, got->lease->owner));
    ASSERT_TRUE(holder_client.release(first, held_first->lease->owner));
    auto got_first = waiting_first.get();
    ASSERT_TRUE(got_first && got_first->acquired());
    EXPECT_TRUE(waiter_client.release(first, got_first->lease->owner));

    migrate_home(ports, slot_of(r), from);
}

TEST(ClusterNotify, AnAclUserWithoutChannelsStillReleasesAndItsWaiterPolls) {
    auto& cluster = SharedCluster::get();
    const auto ports = cluster.ports();
    for (auto p : ports)
        ASSERT_EQ(local::cli_at(p, {"ACL", "SETUSER", "nochan", "on", ">nochan-pw", "~*", "resetchannels", "+@all"}),
                  "OK");
    std::string url = "redis-cluster://nochan:nochan-pw@";
    for (std::size_t i = 0; i < ports.size(); ++i) url += (i ? ",127.0.0.1:" : "127.0.0.1:") + std::to_string(ports[i]);
    auto holder_client = client_for(url);
    auto waiter_client = client_for(url);
    const std::uint16_t owner = local::master_ports(ports.front()).front();
    const auto r = resource_on(owner, "acl");
    auto held = holder_client.try_acquire(r, {.lease = 60s});
    ASSERT_TRUE(held && held->acquired()) << (held ? "contended" : held.error().message());
    const long calls_before = script_calls(owner);
    auto waiting = std::async(std::launch::async, [&] {
        return waiter_client.acquire(r, {.lease = 10s, .wait = 60s, .backoff = {.base = 5ms, .max = 20ms}});
    });
    // Refused twice: its SSUBSCRIBE was refused (NOPERM) and it polls.
    ASSERT_TRUE(eventually([&] { return script_calls(owner) >= calls_before + 2; }));
    // The SPUBLISH in the release script is refused (NOPERM) under pcall: the release stands.
    auto released = holder_client.release(r, held->lease->owner);
    ASSERT_TRUE(released) << released.error().message();
    EXPECT_EQ(*released, ReleaseStatus::released);
    auto got = waiting.get();
    ASSERT_TRUE(got && got->acquired()) << (got ? "not acquired" : got.error().message());
    EXPECT_EQ(shard_subscribers(owner, r), 0);
    EXPECT_TRUE(waiter_client.release(r, got->lease->owner));
    for (auto p : ports) local::cli_at(p, {"ACL", "DELUSER", "nochan"});
}

}  // namespace
}  // namespace fencelock::test_support
