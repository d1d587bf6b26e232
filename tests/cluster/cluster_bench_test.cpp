// `fencelock bench` through redis-cluster://: every scenario runs, exits 0 and prints its JSON
// with sane counts (no timing is asserted: the machine is shared), the hot scenario counts the
// commands of the master that serves its resource, and no bench key is left on any master.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include <nlohmann/json.hpp>

#include "cluster/cluster_fixture.hpp"
#include "local_servers/child_process.hpp"
#include "local_servers/cluster_group.hpp"
#include "local_servers/sentinel_group.hpp"
#include "redis/cluster_slot.hpp"

namespace fencelock::test_support {
namespace {

using nlohmann::json;

#ifdef FENCELOCK_CLI
// The bench keys left on every master (SCAN sees one node's keys only).
std::size_t bench_keys_left(const SharedCluster& cluster) {
    std::size_t n = 0;
    for (std::uint16_t master : local::master_ports(cluster.ports().front())) {
        const std::string keys = local::cli_at(master, {"--scan", "--pattern", "*{fencelock-bench*"});
        n += static_cast<std::size_t>(std::count(keys.begin(), keys.end(), '\n'));
    }
    return n;
}

// A seed that does not serve `key`: everything bench does on it must follow the slot map.
std::string url_away_from(const SharedCluster& cluster, const std::string& key) {
    for (std::uint16_t master : local::master_ports(cluster.ports().front()))
        if (master != cluster.master_of(key)) return cluster.url_with_seed(master);
    throw std::runtime_error("one master serves every slot");
}

json bench(const std::string& url, std::vector<std::string> args) {
    std::vector<std::string> argv{FENCELOCK_CLI, "--redis", url, "bench"};
    argv.insert(argv.end(), args.begin(), args.end());
    const auto got = local::run_process(argv);
    EXPECT_EQ(got.exit_code, 0) << got.err;
    if (got.exit_code != 0) return json::object();
    return json::parse(got.out);
}

TEST(ClusterBench, DistinctCyclesOnEveryMaster) {
    auto& cluster = SharedCluster::get();
    const json out = bench(cluster.url(), {"--scenario", "distinct", "--clients", "6", "--duration", "1s"});
    EXPECT_EQ(out["scenario"], "distinct");
    EXPECT_GT(out["cycles"].get<long>(), 0);
    EXPECT_EQ(out["errors"], 0);
    EXPECT_GT(out["p99_us"].get<long>(), 0);
    EXPECT_EQ(bench_keys_left(cluster), 0u);
}

TEST(ClusterBench, HotCountsTheCommandsOfTheMasterServingItsResource) {
    auto& cluster = SharedCluster::get();
    const std::string url = url_away_from(cluster, "{fencelock-bench-hot}");
    const json out = bench(url, {"--scenario", "hot", "--clients", "3", "--duration", "1s"});
    EXPECT_EQ(out["scenario"], "hot");
    EXPECT_GT(out["acquisitions"].get<long>(), 0);
    EXPECT_EQ(out["errors"], 0) << out.dump();
    // An acquisition runs at least the acquire script on the resource's master: a count read
    // on another node would show (close to) none.
    ASSERT_TRUE(out.contains("commands_per_acquisition")) << out.dump();
    EXPECT_GE(out["commands_per_acquisition"].get<double>(), 1.0) << out.dump();
    EXPECT_EQ(bench_keys_left(cluster), 0u);
}

TEST(ClusterBench, KeeperRenewsLeasesOnEveryMasterAndReportsItsCpu) {
    auto& cluster = SharedCluster::get();
    const json out = bench(url_away_from(cluster, "{fencelock-bench-keeper:0}"),
                           {"--scenario", "keeper", "--leases", "300", "--lease", "1s", "--duration", "2s"});
    EXPECT_EQ(out["scenario"], "keeper");
    EXPECT_EQ(out["leases"], 300);
    EXPECT_GT(out["renewals"].get<long>(), 0);
    EXPECT_EQ(out["leases_lost"], 0);
    EXPECT_GE(out["cpu_seconds"].get<double>(), 0.0);
    EXPECT_TRUE(out.contains("cpu_percent_of_one_core")) << out.dump();
    EXPECT_EQ(bench_keys_left(cluster), 0u);
}
#endif

}  // namespace
}  // namespace fencelock::test_support
