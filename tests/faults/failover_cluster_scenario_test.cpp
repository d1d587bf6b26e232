// The failover scenario (failover_scenario.hpp) on a Redis Cluster master failover: three
// masters with one replica each, cluster-node-timeout 1 s, a cluster of its own per run (the
// shared one of the cluster suite stays whole). No CLUSTER FAILOVER: that hands over only
// after the replica caught up, and nothing would be lost. The master is SIGKILLed; the other
// masters mark it failed and vote for its replica, which takes over its slots. The scenario's
// keys all live in that master's slots. The restarted old master comes back with its
// nodes.conf (its slots, its old config epoch) and no data, refuses writes for its first
// moments (a restarted cluster master waits before it serves), and turns replica when the
// others tell it the slots have a newer owner.
#include <memory>
#include <stdexcept>

#include "cluster/cluster_fixture.hpp"
#include "faults/failover_scenario.hpp"
#include "local_servers/cluster_group.hpp"

namespace fencelock::faults {
namespace {

using namespace std::chrono_literals;

class ClusterFailover final : public FailoverTopology {
public:
    ClusterFailover()
        : group_({.node_timeout_ms = 1000, .server_args = {"--cluster-require-full-coverage", "no"}}),
          doomed_(local::master_ports(group_.ports().front()).front()),
          replica_(group_.replica_of(doomed_)),
          doomed_slot_(test_support::slot_of(test_support::resource_on(group_, doomed_, "probe"))) {}
    std::string_view name() const override { return "cluster"; }
    std::string place(const std::string& stem) const override {
        return test_support::resource_on(group_, doomed_, stem).str();
    }
    local::RedisServer& master() override { return group_.server(group_.index_of(doomed_)); }
    local::RedisServer& replica() override { return group_.server(replica_); }
    // Failure detection (node timeout, then a majority of masters), the replica's election
    // delay (0.5 to 1 s) and its vote: 2.2 to 3.0 s after the kill in the runs so far.
    std::chrono::milliseconds stalled_lease() const override { return 6s; }
    std::uint16_t wait_for_promotion(std::chrono::milliseconds timeout) override {
        const std::uint16_t port = group_.wait_for_takeover(doomed_, doomed_slot_, timeout);
        if (port != replica().port()) throw std::runtime_error("another node than the replica took over");
        return port;
    }

private:
    local::ClusterGroup group_;
    std::uint16_t doomed_;
    std::size_t replica_;
    // A slot of the doomed master (place() finds none once its slots moved).
    std::uint16_t doomed_slot_;
};

class ClusterMasterFailover : public FailoverScenario {
protected:
    std::unique_ptr<FailoverTopology> make_topology() override { return std::make_unique<ClusterFailover>(); }
};

TEST_P(ClusterMasterFailover, EveryFenceIssuedAfterTheFailoverIsAboveEveryFenceIssuedBefore) {
    run("cluster_failover_lost_writes");
}

INSTANTIATE_TEST_SUITE_P(Faults, ClusterMasterFailover, ::testing::ValuesIn(stores_only()), mode_name);

}  // namespace
}  // namespace fencelock::faults
