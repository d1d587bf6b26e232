// The failover scenario (failover_scenario.hpp) on a Sentinel failover: master, one replica,
// three sentinels, down-after 1 s; a group of its own per run. The sentinels promote the
// replica once the master is silent; the restarted old master serves, empty, until they
// demote it.
#include <memory>

#include "faults/failover_scenario.hpp"
#include "local_servers/sentinel_group.hpp"

namespace fencelock::faults {
namespace {

using namespace std::chrono_literals;

class SentinelFailover final : public FailoverTopology {
public:
    SentinelFailover() : group_(options()) {}
    std::string_view name() const override { return "sentinel"; }
    std::string place(const std::string& stem) const override { return stem; }
    local::RedisServer& master() override { return group_.server(0); }
    local::RedisServer& replica() override { return group_.server(1); }
    // The sentinels promote within about 2.3 s of the kill (docs/RELIABILITY.md).
    std::chrono::milliseconds stalled_lease() const override { return 4s; }
    std::uint16_t wait_for_promotion(std::chrono::milliseconds timeout) override {
        return group_.server(group_.wait_for_new_master(0, timeout)).port();
    }

private:
    static local::SentinelGroupOptions options() {
        local::SentinelGroupOptions o;
        o.down_after_ms = 1000;
        o.failover_timeout_ms = 3000;
        return o;
    }
    local::SentinelGroup group_;
};

class Failover : public FailoverScenario {
protected:
    std::unique_ptr<FailoverTopology> make_topology() override { return std::make_unique<SentinelFailover>(); }
};

TEST_P(Failover, EveryFenceIssuedAfterTheFailoverIsAboveEveryFenceIssuedBefore) { run("failover_lost_writes"); }

INSTANTIATE_TEST_SUITE_P(Faults, Failover, ::testing::ValuesIn(stores_only()), mode_name);

}  // namespace
}  // namespace fencelock::faults
