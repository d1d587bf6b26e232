#pragma once
// Where the failover scenario (failover_scenario.hpp) gets its failover from: a Sentinel
// group or a Redis Cluster, each started for one run. The scenario only needs these steps,
// so one body checks both; what differs is who promotes the replica (the sentinels, or the
// cluster's other masters voting for it) and where the scenario's keys must live (on a
// cluster, in a slot of the master that fails).
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "local_servers/redis_server.hpp"

namespace fencelock::faults {

class FailoverTopology {
public:
    virtual ~FailoverTopology() = default;
    /// "sentinel" or "cluster", for the summary line.
    virtual std::string_view name() const = 0;
    /// A resource or queue name made from `stem` whose hash tag lives on the master that
    /// will fail (`stem` itself where there is one master).
    virtual std::string place(const std::string& stem) const = 0;
    /// The master that will fail; the scenario restarts it (empty) at the end.
    virtual local::RedisServer& master() = 0;
    /// Its replica that will be promoted.
    virtual local::RedisServer& replica() = 0;
    /// Long enough to outlast the promotion, so the stalled holder still believes in its
    /// lease when the new holders start.
    virtual std::chrono::milliseconds stalled_lease() const = 0;
    /// Waits until the promoted replica serves the scenario's keys as master; returns its
    /// port. Throws std::runtime_error after `timeout`.
    virtual std::uint16_t wait_for_promotion(std::chrono::milliseconds timeout) = 0;

    /// True once the replica acknowledged everything the master accepted so far.
    bool replicated() { return master().cli({"WAIT", "1", "5000"}) == "1"; }
    /// From now on the master's writes never reach the replica: the replica is paused
    /// (SIGSTOP) and the master drops its link. Both topologies cut it the same way.
    void cut_replication() {
        replica().pause();
        (void)master().cli({"CLIENT", "KILL", "TYPE", "replica"});
    }
    /// SIGKILLs the master and lets the replica run again, so it can be promoted.
    void kill_master() {
        master().kill();
        replica().resume();
    }
};

}  // namespace fencelock::faults
