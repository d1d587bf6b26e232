#pragma once
/// Hooks the queue runtime calls on job events, for metrics and logs (like LockObserver).
/// Calls come from worker slot threads. Implementations must be thread-safe, fast, and must not
/// throw; a hook that blocks holds up its slot (tests use that to stop a worker at a chosen
/// point).

#include <system_error>

#include "fencelock/queue_job.hpp"

namespace fencelock {

class QueueObserver {
public:
    virtual ~QueueObserver() = default;
    /// A worker took a job from the queue (fresh, reclaimed from a stalled worker, or promoted
    /// and then read). `reclaimed` is true for XAUTOCLAIM takeovers.
    virtual void on_delivered(const Job&, bool /*reclaimed*/) noexcept {}
    /// The lease on the job's resource was granted; the handler runs next.
    virtual void on_acquired(const Job&, FencingToken) noexcept {}
    /// The protocol decided; called before the transport acts on the decision (acknowledge,
    /// requeue, dead-letter).
    virtual void on_decision(const Decision&) noexcept {}
    /// The transport acted on the decision. `applied` is false when the entry was no longer
    /// this worker's (reclaimed by another after a stall): nothing changed.
    virtual void on_settled(const Decision&, bool /*applied*/) noexcept {}
    /// A Redis call of the transport failed (the worker backs off).
    virtual void on_transport_error(std::error_code) noexcept {}
};

}  // namespace fencelock
