// Replica acknowledgement through redis-cluster://: WAIT counts the replicas that acknowledged
// the writes made before it on its own connection, so it must follow the acquire to the master
// of the resource's slot. A cluster of this test's own (a replica is paused), with a node
// timeout longer than the test: nothing fails over.
#include <gtest/gtest.h>

#include "cluster/cluster_fixture.hpp"
#include "fencelock/client.hpp"
#include "fencelock/error.hpp"
#include "local_servers/cluster_group.hpp"

namespace fencelock::test_support {
namespace {

using namespace std::chrono_literals;

TEST(ClusterReplicaAck, TheWaitFollowsTheAcquireToItsMasterAndAPausedReplicaFailsOnlyItsShard) {
    local::ClusterGroup group({.node_timeout_ms = 120000, .server_args = {"--cluster-require-full-coverage", "no"}});
    const auto masters = local::master_ports(group.ports().front());
    ASSERT_EQ(masters.size(), 3u);
    auto c = LockClient::create({.endpoint = *parse_redis_url(group.url()), .command_timeout = 5s});
    ASSERT_TRUE(c.has_value());
    const AcquireOptions replicated{.lease = 10s, .replicas = 1, .replica_timeout = 2s};
    for (std::uint16_t master : masters) {
        const auto r = resource_on(group, master, "ack:");
        auto got = c->acquire(r, replicated);
        ASSERT_TRUE(got && got->acquired()) << (got ? "contended" : got.error().message());
        EXPECT_TRUE(c->release(r, got->lease->owner));
    }

    // The first master's replica stops: a grant there cannot be acknowledged, whatever the
    // other masters' replicas say; the other shards are unaffected.
    const std::size_t replica = group.replica_of(masters[0]);
    group.server(replica).pause();
    const auto stuck = resource_on(group, masters[0], "ack-stuck:");
    auto refused = c->acquire(stuck, {.lease = 10s, .replicas = 1, .replica_timeout = 200ms});
    ASSERT_FALSE(refused.has_value()) << "acquired with its only replica paused";
    EXPECT_EQ(refused.error(), errc::not_replicated) << refused.error().message();
    for (std::size_t i = 1; i < masters.size(); ++i) {
        auto got = c->acquire(resource_on(group, masters[i], "ack-ok:"), replicated);
        EXPECT_TRUE(got && got->acquired()) << (got ? "contended" : got.error().message());
    }
    group.server(replica).resume();
}

}  // namespace
}  // namespace fencelock::test_support
