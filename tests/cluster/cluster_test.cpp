// fencelock through redis-cluster:// against a real Redis Cluster (three masters, one replica
// each): every lock call for resources on every master through any single seed, kept leases
// renewed on every master, and the bad inputs (a plain server, no reachable seed).
#include <gtest/gtest.h>

#include <unistd.h>

#include <map>
#include <string>

#include "cluster/cluster_fixture.hpp"
#include "fencelock/client.hpp"
#include "local_servers/cluster_group.hpp"
#include "local_servers/redis_server.hpp"
#include "local_servers/sentinel_group.hpp"
#include "support/eventually.hpp"

namespace fencelock::test_support {
namespace {

using namespace std::chrono_literals;

std::string lock_key(const ResourceName& r) { return "lock:{" + r.str() + "}"; }
std::string fence_key(const ResourceName& r) { return "fence:{" + r.str() + "}"; }

TEST(Cluster, EveryCallWorksForResourcesOnEveryMasterThroughAnySeed) {
    auto& cluster = SharedCluster::get();
    const auto masters = local::master_ports(cluster.ports().front());
    ASSERT_EQ(masters.size(), 3u);
    // Each node alone as the seed, replicas included: the client learns the map from it.
    for (std::uint16_t seed : cluster.ports()) {
        auto c = client_for(cluster.url_with_seed(seed));
        for (std::uint16_t master : masters) {
            const auto r = resource_on(master, "seed" + std::to_string(seed));
            auto got = c.try_acquire(r, {.lease = 10s});
            ASSERT_TRUE(got && got->acquired()) << (got ? "contended" : got.error().message());
            const Lease& lease = *got->lease;
            // The lease is on the master that serves its slot, and nowhere else.
            EXPECT_EQ(local::cli_at(master, {"GET", fence_key(r)}), std::to_string(lease.fence.value()));
            EXPECT_EQ(local::cli_at(master, {"EXISTS", lock_key(r)}), "1");
            auto again = c.try_acquire(r, {.lease = 10s});
            ASSERT_TRUE(again.has_value()) << again.error().message();
            EXPECT_FALSE(again->acquired());
            auto renewed = c.renew(r, lease.owner, 10s);
            ASSERT_TRUE(renewed) << renewed.error().message();
            EXPECT_EQ(renewed->status, RenewStatus::renewed);
            auto info = c.inspect(r);
            ASSERT_TRUE(info) << info.error().message();
            ASSERT_TRUE(info->holder.has_value());
            EXPECT_EQ(info->holder->fence, lease.fence);
            auto released = c.release(r, lease.owner);
            ASSERT_TRUE(released) << released.error().message();
            EXPECT_EQ(*released, ReleaseStatus::released);
            EXPECT_EQ(local::cli_at(master, {"EXISTS", lock_key(r)}), "0");
        }
    }
}

TEST(Cluster, ResourcesSpreadOverAllSlotsAreServed) {
    auto& cluster = SharedCluster::get();
    auto c = client_for(cluster.url());
    std::map<std::uint16_t, int> per_master;
    for (int i = 0; i < 300; ++i) {
        const auto r = *ResourceName::make("cluster:spread:" + std::to_string(::getpid()) + ":" + std::to_string(i));
        auto got = c.try_acquire(r, {.lease = 10s});
        ASSERT_TRUE(got && got->acquired()) << (got ? "contended" : got.error().message());
        auto released = c.release(r, got->lease->owner);
        ASSERT_TRUE(released && *released == ReleaseStatus::released);
        if (i % 30 == 0) ++per_master[cluster.master_of(lock_key(r))];
    }
    EXPECT_EQ(per_master.size(), 3u);  // ten samples land on all three masters
}

TEST(Cluster, KeptLeasesAreRenewedOnEveryMaster) {
    auto& cluster = SharedCluster::get();
    auto c = client_for(cluster.url());
    std::vector<Holding> held;
    for (std::uint16_t master : local::master_ports(cluster.ports().front())) {
        for (int i = 0; i < 3; ++i) {
            auto h = c.hold(resource_on(master, "kept" + std::to_string(i)), {.lease = 600ms},
                            KeepOptions{.renew_every = 100ms});
            ASSERT_TRUE(h && h->acquired()) << (h ? "contended" : h.error().message());
            held.push_back(std::move(*h));
        }
    }
    // Every lease is renewed several times; none is lost.
    ASSERT_TRUE(eventually([&] { return c.keeper_stats().renewals_confirmed >= 9 * 4; }, 20s))
        << c.keeper_stats().renewals_confirmed;
    for (const auto& h : held) EXPECT_TRUE(h.lease->valid());
    EXPECT_EQ(c.keeper_stats().leases_lost, 0u);
}

TEST(Cluster, APlainServerBehindRedisClusterFailsWithAClearErrorAndNothingWritten) {
    local::RedisServer plain;
    const std::string before = plain.snapshot();
    auto c = client_for("redis-cluster://127.0.0.1:" + std::to_string(plain.port()));
    auto got = c.try_acquire(*ResourceName::make("cluster:plain"), {.lease = 5s});
    ASSERT_FALSE(got.has_value());
    EXPECT_EQ(got.error(), errc::not_cluster) << got.error().message();
    EXPECT_EQ(classify(got.error()), failure_kind::fatal);
    EXPECT_NE(got.error().message().find("redis://"), std::string::npos) << got.error().message();
    EXPECT_EQ(plain.snapshot(), before);
}

TEST(Cluster, NoReachableSeedFailsClosedAsUnavailable) {
    const auto a = local::free_port(), b = local::free_port();
    auto ep = parse_redis_url("redis-cluster://127.0.0.1:" + std::to_string(a) + ",127.0.0.1:" + std::to_string(b));
    ASSERT_TRUE(ep.has_value());
    auto c = LockClient::create({.endpoint = *ep, .connect_timeout = 200ms, .command_timeout = 500ms});
    ASSERT_TRUE(c.has_value());
    auto got = c->acquire(*ResourceName::make("cluster:nobody"), {.lease = 5s, .wait = 1s});
    ASSERT_FALSE(got.has_value());
    EXPECT_EQ(got.error(), errc::unavailable) << got.error().message();
}

}  // namespace
}  // namespace fencelock::test_support
