#pragma once
// The failover scenario of the fault suite, one body for every topology (failover_topology.hpp):
// a failover that loses the master's last writes, each run on a topology of its own (the
// scenario is destructive).
//
//  1. Holders take the lock on the master and write; the replica confirms (WAIT). K takes a
//     long lease on a second resource, also confirmed.
//  2. Replication is cut (replica SIGSTOPped, its link killed). More ownerships on the master,
//     two of them writing: those fences are lost with the master. Then X acquires, reads,
//     checks its lease and stalls (a GC pause) without writing.
//  3. The master is killed (SIGKILL), the replica resumed; the topology promotes it.
//  4. New holders acquire on the promoted master until one's write is accepted; one tries K's
//     resource, which K still holds there.
//  5. X wakes after its lease ended and writes with its pre-failover fence.
//  6. The old master restarts without persistence and serves as an empty master until it is
//     demoted; a holder pointed at it directly tries to acquire and write (a cluster node
//     refuses writes for its first moments back, so there the attempt may find no lease).
//
// Queue jobs enqueued before the cut must all be on the promoted master; those enqueued (and
// acknowledged) while it was cut are lost, which is what asynchronous replication promises:
// the scenario counts them and documents the loss rather than calling it a violation.
//
// Holders are given the current master's address explicitly; no Sentinel or Cluster client is
// needed. The store checks fences in both modes. Protected: LockClient's fences, which must
// put every fence issued after the failover (or by the empty master) above every fence issued
// before it: X's write is rejected, the first write after the promotion is accepted. The
// negative control takes fences from `SET NX PX` + `INCR` (failover_fences.hpp): the counter
// goes back, fences are issued twice, and X's older lease writes after a newer lease's write
// (lease_order).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "faults/failover_fences.hpp"
#include "faults/failover_topology.hpp"
#include "faults/scenario.hpp"
#include "fencelock/queue.hpp"

namespace fencelock::faults {

class FailoverScenario : public ScenarioTest {
protected:
    /// The topology of this run, started fresh.
    virtual std::unique_ptr<FailoverTopology> make_topology() = 0;
    void SetUp() override;
    void TearDown() override;

    /// Runs the scenario and prints its summary line as `scenario`.
    void run(const std::string& scenario);

private:
    struct Round {
        std::uint64_t fence = 0;
        std::optional<TargetStatus> write;
    };
    std::optional<Round> round(Recorder& rec, std::uint16_t port, const std::string& element);
    bool enqueue(std::uint16_t port, const std::string& prefix, int n);
    std::int64_t jobs_ready(std::uint16_t port);
    JobQueue queue_at(std::uint16_t port) const;
    std::uint64_t highest_fence_granted_before(std::int64_t t_ns);

    std::unique_ptr<FailoverTopology> topology;
    std::unique_ptr<FenceSource> fences;
    std::string r, kept, queue;
};

}  // namespace fencelock::faults
