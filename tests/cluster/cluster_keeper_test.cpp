// One keeper renewing leases on every master of a cluster, one pipeline per node, the nodes'
// batches independent: a master that stops answering (SIGSTOP: its socket accepts, nothing
// comes back) costs only the leases on it, while the other masters' leases go on being renewed.
// The cluster is this test's own: pausing a master of the shared one would fail it over under
// the other tests. No replicas, a node timeout longer than the test and full coverage not
// required, so the healthy masters keep serving their slots while one is paused.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "cluster/cluster_fixture.hpp"
#include "fencelock/client.hpp"
#include "local_servers/cluster_group.hpp"
#include "support/eventually.hpp"

namespace fencelock::test_support {
namespace {

using namespace std::chrono_literals;

TEST(ClusterKeeper, APausedMasterLosesOnlyTheLeasesOnIt) {
    local::ClusterGroup group({.replicas_per_master = 0,
                               .node_timeout_ms = 120000,
                               .server_args = {"--cluster-require-full-coverage", "no"}});
    const auto masters = local::master_ports(group.ports().front());
    ASSERT_EQ(masters.size(), 3u);
    auto c = client_for(group.url());  // command timeout 1 s: longer than a renewal interval
    std::map<std::uint16_t, std::vector<HeldLease>> held;
    for (std::uint16_t master : masters)
        for (int i = 0; i < 3; ++i) {
            auto h = c.hold(resource_on(group, master, "keeper" + std::to_string(i) + ":"), {.lease = 1500ms},
                            KeepOptions{.renew_every = 200ms});
            ASSERT_TRUE(h && h->acquired()) << (h ? "contended" : h.error().message());
            held[master].push_back(std::move(*h->lease));
        }
    auto all_renewed = [&](std::uint16_t master, std::uint64_t times) {
        for (const auto& h : held[master])
            if (h.renewals() < times) return false;
        return true;
    };
    // One keeper renews the leases on all three masters.
    for (std::uint16_t master : masters) ASSERT_TRUE(eventually([&] { return all_renewed(master, 2); }, 20s));

    const std::uint16_t paused = masters[1];
    std::size_t paused_index = 0;
    while (group.server(paused_index).port() != paused) ++paused_index;
    group.server(paused_index).pause();
    // valid() turns false on the local clock, the loss is reported by the keeper's next pass:
    // wait for the report.
    ASSERT_TRUE(eventually([&] {
        for (const auto& h : held[paused])
            if (h.valid() || !h.loss()) return false;
        return true;
    }, 20s));
    for (const auto& h : held[paused]) EXPECT_EQ(h.loss(), LossReason::expired);

    // The healthy masters' leases are renewed again and again after the paused ones were lost.
    std::map<std::uint16_t, std::uint64_t> after;
    for (std::uint16_t master : masters) {
        if (master == paused) continue;
        std::uint64_t most = 0;
        for (const auto& h : held[master]) most = std::max(most, h.renewals());
        after[master] = most;
    }
    for (const auto& [master, most] : after)
        EXPECT_TRUE(eventually([&] { return all_renewed(master, most + 3); }, 20s)) << "master " << master;
    for (const auto& [master, most] : after)
        for (const auto& h : held[master]) EXPECT_TRUE(h.valid()) << h.resource().str() << " on " << master;
    EXPECT_EQ(c.keeper_stats().leases_lost, 3u);

    group.server(paused_index).resume();
    for (auto& [master, leases] : held)
        for (auto& h : leases) (void)h.release();
}

}  // namespace
}  // namespace fencelock::test_support
