#pragma once
/// JobProcessor: the per-job protocol, independent of any transport. The built-in Redis
/// Streams worker (QueueWorker) calls it; so can a Kafka, RabbitMQ or SQS consumer loop:
///
///     auto processor = fencelock::JobProcessor::create(locks, store, {}).value();
///     fencelock::Decision d = processor.process(job, handler);
///     if (d.acknowledges()) ack(); else if (d.requeues()) redeliver_after(d.job, d.delay);
///     else if (d.verdict == fencelock::Verdict::dead) dead_letter(d.job, d.reason);
///     // Verdict::cancelled: leave the message unacknowledged.
///
/// One job: a fresh owner token and ONE acquisition attempt on the job's resource (a worker
/// slot never waits for a lock) -> contended: requeue after a delay. Acquired: the client's
/// keeper renews the lease while the handler runs with the fence, the owner and a stop token
/// (lease lost or cancelled). In transactional mode the handler runs inside a fenced
/// FencedStore::transact() carrying the job's idempotency key, so the completion is recorded in
/// the same transaction as the effect; the lease is checked again after the handler and the
/// transaction is rolled back if it was lost. The lease is released at the end.

#include <functional>
#include <memory>
#include <stop_token>

#include "fencelock/client.hpp"
#include "fencelock/queue_job.hpp"
#include "fencelock/queue_observer.hpp"
#include "fencelock/store.hpp"

namespace fencelock {

/// What a handler gets besides the job.
struct JobContext {
    const Job& job;
    /// The lease's fencing token: pass it to every system the job writes to.
    FencingToken fence;
    /// The lease's owner token (fresh for this attempt).
    const OwnerToken& owner;
    /// Requested when the lease is lost or the attempt is cancelled (shutdown deadline).
    /// A handler that sees it must stop and must not write anything final.
    std::stop_token stop;
    /// The lease itself (valid(), safe_until()).
    const HeldLease& lease;
};

/// Runs inside the fenced transaction: everything done through `tx` commits together with
/// the fence update and the idempotency key, or not at all. Do no network calls here: the
/// transaction holds the resource's guard row lock.
using TransactionalHandler = std::function<std::expected<void, JobFailure>(const JobContext&, Transaction& tx)>;
/// Runs outside any database transaction (external effects: HTTP calls, a child process).
/// It must itself pass the fence to whatever it writes to. On success the processor records
/// the idempotency key in a fenced transaction of its own.
using ExternalHandler = std::function<std::expected<void, JobFailure>(const JobContext&)>;

struct ProcessorOptions {
    /// Lease on the job's resource, renewed by the client's keeper while the handler runs.
    /// Default 30 s.
    milliseconds lease{30'000};
    /// Longest a single attempt may hold the resource (enforced by Redis). Default 1 h.
    milliseconds max_hold{std::chrono::hours(1)};
    /// AcquireOptions::replicas and replica_timeout for the job's lease: a grant or renewal
    /// counts only once that many replicas acknowledged it. A job whose grant was not
    /// acknowledged is retried like any retryable Redis failure. Default 0 (off), 200 ms.
    unsigned replicas = 0;
    milliseconds replica_timeout{200};
    /// Retry delays and the business attempt limit.
    RetryPolicies retry{};
    /// Receives job events. Default none.
    std::shared_ptr<QueueObserver> observer{};

    std::expected<void, OptionError> validate() const;
};

/// Thread-safe: any number of threads may process jobs through one processor. The client and
/// the store must outlive it.
class JobProcessor {
public:
    static std::expected<JobProcessor, OptionError> create(LockClient& locks, FencedStore& store,
                                                           ProcessorOptions options);

    /// Transactional mode. `cancel` stops the handler (through its stop token) and rolls back.
    /// Exceptions from the handler become business failures ("exception: what()").
    Decision process(const Job& job, const TransactionalHandler& handler, std::stop_token cancel = {});
    /// External mode: the handler runs outside the database; on success the completion is
    /// recorded with transact() (idempotency key, empty mutation), so a duplicate is detected.
    Decision process_external(const Job& job, const ExternalHandler& handler, std::stop_token cancel = {});

    const ProcessorOptions& options() const noexcept { return options_; }

private:
    JobProcessor(LockClient& locks, FencedStore& store, ProcessorOptions options)
        : locks_(&locks), store_(&store), options_(std::move(options)) {}
    template <typename Run>
    Decision with_lease(const Job& job, std::stop_token cancel, Run&& run);

    LockClient* locks_;
    FencedStore* store_;
    ProcessorOptions options_;
};

}  // namespace fencelock
