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
#include "support/clock_offset.hpp"
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
    ASSERT_TRUE(eventually(
        [&] {
            for (const auto& h : held[paused])
                if (h.valid() || !h.loss()) return false;
            return true;
        },
        20s));
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

// A forward step of one master's wall clock expires the leases there at once (Redis expires
// keys by mstime()). The keeper reads each node's clock once a second (the keyed clock_probe
// script) and declares that node's leases lost as a clock step, long before their next renewal
// (10 s into a 30 s lease) would find them gone; the other masters' leases are kept.
TEST(ClusterKeeper, AForwardStepOfOneMastersClockLosesOnlyItsLeasesAtOnce) {
    std::vector<ClockOffset> clocks(3);
    // A node timeout well past the step: the stepped node's cluster bus sees its peers late.
    local::ClusterGroup group({.replicas_per_master = 0,
                               .node_timeout_ms = 600000,
                               .server_args = {"--cluster-require-full-coverage", "no"},
                               .server_env = {clocks[0].env(), clocks[1].env(), clocks[2].env()}});
    const auto masters = local::master_ports(group.ports().front());
    ASSERT_EQ(masters.size(), 3u);
    const std::uint16_t stepped = masters[1];
    const std::size_t stepped_index = group.index_of(stepped);
    auto c = client_for(group.url());
    std::map<std::uint16_t, HeldLease> held;
    for (std::uint16_t master : masters) {
        auto h = c.hold(resource_on(group, master, "clock-step:"), {.lease = 30s});
        ASSERT_TRUE(h && h->acquired()) << (h ? "contended" : h.error().message());
        held.emplace(master, std::move(*h->lease));
    }
    // Two probes of the stepped node before the step, so the watch has a reading to compare
    // with. The probe is a script; no renewal runs before 10 s into the lease, so the script
    // calls after the acquisitions are probes (three calls: the first may be EVALSHA refused
    // with NOSCRIPT, then EVAL).
    const auto script_calls = [&] {
        const std::string stats = group.server(stepped_index).cli({"INFO", "commandstats"});
        long calls = 0;
        for (const std::string verb : {"cmdstat_evalsha:calls=", "cmdstat_eval:calls="})
            if (const auto at = stats.find(verb); at != std::string::npos)
                calls += std::stol(stats.substr(at + verb.size()));
        return calls;
    };
    const long after_acquisitions = script_calls();
    ASSERT_TRUE(eventually([&] { return script_calls() >= after_acquisitions + 3; }, 20s))
        << "the node's clock is not probed";

    clocks[stepped_index].step(120s);
    ASSERT_TRUE(eventually([&] { return held.at(stepped).loss().has_value(); }, 20s));
    EXPECT_EQ(held.at(stepped).loss(), LossReason::clock_step) << "found at a renewal instead of by the probe";
    EXPECT_EQ(held.at(stepped).renewals(), 0u);
    for (std::uint16_t master : masters) {
        if (master == stepped) continue;
        EXPECT_FALSE(held.at(master).loss()) << "a lease on an unstepped master was lost";
        EXPECT_TRUE(held.at(master).valid());
    }
    EXPECT_EQ(c.keeper_stats().leases_lost, 1u);
    for (auto& [master, h] : held) (void)h.release();
}

}  // namespace
}  // namespace fencelock::test_support
