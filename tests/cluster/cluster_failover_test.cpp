// A cluster master killed while it holds leases and its replica promoted by the cluster, on
// a cluster of this test's own (the shared one stays whole). The Sentinel issue's checks: the
// writes the replica never received are lost (the recipe of tests/faults' failover scenario:
// replica paused, its link killed, then acquisitions on the master), and yet a fence issued
// after the failover is above every fence issued before it; the client follows the promotion
// through its seeds, and a kept lease on a healthy master is not lost meanwhile.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "cluster/cluster_fixture.hpp"
#include "fencelock/client.hpp"
#include "local_servers/cluster_group.hpp"
#include "local_servers/sentinel_group.hpp"
#include "redis/cluster_slot.hpp"
#include "support/eventually.hpp"

namespace fencelock::test_support {
namespace {

using namespace std::chrono_literals;

TEST(ClusterFailover, AKilledMasterIsReplacedAndFencesStayAboveEveryFenceIssuedBefore) {
    // Healthy shards keep serving while one has no master (see RUNBOOK, node failure).
    local::ClusterGroup group({.node_timeout_ms = 1000, .server_args = {"--cluster-require-full-coverage", "no"}});
    const auto masters = local::master_ports(group.ports().front());
    const std::uint16_t doomed = masters[0];
    const auto r = resource_on(group, doomed, "failover:");
    const auto kept_r = resource_on(group, masters[1], "kept:");
    auto c = LockClient::create({.endpoint = *parse_redis_url(group.url())});
    ASSERT_TRUE(c.has_value());

    auto kept = c->hold(kept_r, {.lease = 3s});
    ASSERT_TRUE(kept && kept->acquired());
    std::uint64_t highest = 0;
    auto cycle = [&] {
        auto got = c->try_acquire(r, {.lease = 30s});
        ASSERT_TRUE(got && got->acquired()) << (got ? "contended" : got.error().message());
        EXPECT_GT(got->lease->fence.value(), highest);
        highest = got->lease->fence.value();
        ASSERT_TRUE(c->release(r, got->lease->owner));
    };
    for (int i = 0; i < 3; ++i) cycle();

    // Cut replication, then issue fences only the doomed master will ever know.
    const std::size_t replica = group.replica_of(doomed);
    group.server(replica).pause();
    (void)local::cli_at(doomed, {"CLIENT", "KILL", "TYPE", "replica"});
    for (int i = 0; i < 3; ++i) cycle();
    const std::string lost_counter = local::cli_at(doomed, {"GET", "fence:{" + r.str() + "}"});
    ASSERT_EQ(lost_counter, std::to_string(highest));
    auto last_lease = c->try_acquire(r, {.lease = 30s});  // held when the master dies
    ASSERT_TRUE(last_lease && last_lease->acquired());
    highest = last_lease->lease->fence.value();

    group.server(group.index_of(doomed)).kill();
    group.server(replica).resume();

    // The cluster promotes the replica, which never saw the last acquisitions.
    const std::uint16_t promoted = group.server(replica).port();
    const auto slot = detail::key_slot("{" + r.str() + "}");
    ASSERT_TRUE(eventually([&] { return local::slot_master_port(promoted, slot) == promoted; }, 60s));
    const std::string counter = local::cli_at(promoted, {"GET", "fence:{" + r.str() + "}"});
    EXPECT_LT(std::stoull(counter), highest) << "the promoted replica was meant to lose the last fences";

    // The client, whose map still names the dead master, finds the new one and acquires.
    auto after = c->acquire(r, {.lease = 30s, .wait = 60s});
    ASSERT_TRUE(after && after->acquired()) << (after ? "contended" : after.error().message());
    EXPECT_GT(after->lease->fence.value(), highest) << "a fence issued after the failover must be above all before";
    EXPECT_EQ(local::cli_at(promoted, {"EXISTS", "lock:{" + r.str() + "}"}), "1");

    // The lease on the healthy master was renewed throughout.
    EXPECT_TRUE(kept->lease->valid());
    EXPECT_EQ(c->keeper_stats().leases_lost, 0u);
}

// Cluster has no failover grace (README, "Redis Cluster"; DESIGN, failure model): a lease the
// dead master never replicated is gone from the promoted replica, which grants the lock again
// at once while its first holder still trusts its lease. What carries a lease across a Cluster
// failover is replica acknowledgement: with replicas = 1 a grant counts only once its master's
// replica has it, so the promoted replica refuses a second owner until that lease runs out.
TEST(ClusterFailover, OnlyAReplicatedLeaseSurvivesAMasterFailover) {
    local::ClusterGroup group({.node_timeout_ms = 1000, .server_args = {"--cluster-require-full-coverage", "no"}});
    const auto masters = local::master_ports(group.ports().front());
    const std::uint16_t doomed = masters[0];
    const auto unacked = resource_on(group, doomed, "unacked:");
    const auto acked = resource_on(group, doomed, "acked:");
    auto c = LockClient::create({.endpoint = *parse_redis_url(group.url()), .command_timeout = 5s});
    ASSERT_TRUE(c.has_value());

    auto kept = c->acquire(acked, {.lease = 60s, .replicas = 1, .replica_timeout = 2s});
    ASSERT_TRUE(kept && kept->acquired()) << (kept ? "contended" : kept.error().message());
    // The second lease reaches the master only.
    const std::size_t replica = group.replica_of(doomed);
    group.server(replica).pause();
    (void)local::cli_at(doomed, {"CLIENT", "KILL", "TYPE", "replica"});
    auto lost = c->acquire(unacked, {.lease = 60s});
    ASSERT_TRUE(lost && lost->acquired()) << (lost ? "contended" : lost.error().message());
    group.server(group.index_of(doomed)).kill();
    group.server(replica).resume();
    const std::uint16_t promoted = group.server(replica).port();
    const auto slot = detail::key_slot("{" + unacked.str() + "}");
    ASSERT_TRUE(eventually([&] { return local::slot_master_port(promoted, slot) == promoted; }, 60s));

    auto other = LockClient::create({.endpoint = *parse_redis_url(group.url()), .command_timeout = 5s});
    ASSERT_TRUE(other.has_value());
    // The control: granted again at once, inside the first lease. Two owners; only fences help.
    auto overlap = other->acquire(unacked, {.lease = 10s, .wait = 30s});
    ASSERT_TRUE(overlap && overlap->acquired()) << (overlap ? "contended" : overlap.error().message());
    EXPECT_LT(std::chrono::steady_clock::now(), lost->lease->safe_until) << "the first lease was still trusted";
    EXPECT_GT(overlap->lease->fence, lost->lease->fence) << "fences still move forward (they follow the clock)";
    // The acknowledged lease came through: nobody else is granted it.
    auto refused = other->try_acquire(acked, {.lease = 10s});
    ASSERT_TRUE(refused) << refused.error().message();
    EXPECT_FALSE(refused->acquired()) << "a lease its replica acknowledged was lost with the master";
    auto renewed = c->renew(acked, kept->lease->owner, 60s);
    ASSERT_TRUE(renewed) << renewed.error().message();
    EXPECT_EQ(renewed->status, RenewStatus::renewed) << "the holder of the replicated lease keeps it";
}

}  // namespace
}  // namespace fencelock::test_support
