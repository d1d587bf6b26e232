#pragma once
/// Jobs, retry policies and the decisions the per-job protocol takes (docs/QUEUE.md).
///
/// Three kinds of retry are kept apart on purpose, because they mean different things:
///  - **contention**: another worker holds the job's resource. Normal under load, never a
///    failure; the job waits a growing, jittered delay in the delayed set (no busy waiting).
///  - **business**: the handler failed. Retried under its own policy up to a maximum, then the
///    job goes to the dead-letter stream with the reason.
///  - **infrastructure**: Redis or the database did not answer (or the lease was lost). The job
///    goes back and the worker backs off; nothing runs without a lock (fail closed).

#include <chrono>
#include <cstdint>
#include <expected>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <system_error>

#include "fencelock/options.hpp"
#include "fencelock/types.hpp"

namespace fencelock {

/// One unit of work. `resource` is what must not be worked on concurrently: every job of the
/// same resource runs under that resource's lease, one at a time.
struct Job {
    /// Stable across retries and redeliveries: 32 hex characters generated at enqueue.
    std::string id;
    /// Name of the queue the job came from.
    std::string queue;
    ResourceName resource;
    /// Completion key (1..256 bytes): a job whose key already completed is not applied again.
    std::string idempotency_key;
    /// JSON text, passed to the handler unchanged.
    std::string payload;
    /// Attempts that found the resource locked by someone else.
    std::uint32_t contention_attempts = 0;
    /// Attempts whose handler failed.
    std::uint32_t business_attempts = 0;
    /// Attempts that ended in an infrastructure failure, a lost lease or a "retry later".
    std::uint32_t infrastructure_attempts = 0;
    /// Times the job was handed to a worker, redeliveries included.
    std::uint32_t deliveries = 0;
    /// Reason of the last failed attempt (empty: none).
    std::string last_error;
};

/// Delay before retry n (n = attempts made so far of that kind, from 0):
/// `min(cap, base * 2^n) + uniform(0, jitter)`.
struct RetryPolicy {
    /// Delay of the first retry, before jitter. Must be positive.
    milliseconds base{500};
    /// Largest delay before jitter. Must be >= base.
    milliseconds cap{30'000};
    /// Upper bound of the uniform random part added to every delay (0: none).
    milliseconds jitter{1000};

    /// `prefix` names the field in the error ("retry.contention").
    std::expected<void, OptionError> validate(std::string_view prefix) const;
};

/// The delay of RetryPolicy for retry `attempt`, with jitter drawn from `rng`. Pure.
milliseconds retry_delay(const RetryPolicy& policy, std::uint32_t attempt, std::mt19937_64& rng) noexcept;

struct RetryPolicies {
    /// Resource locked by another worker. Default 500 ms base, 30 s cap, 1 s jitter.
    RetryPolicy contention{};
    /// Handler failures. Default 1 s base, 60 s cap, 1 s jitter.
    RetryPolicy business{.base = milliseconds(1000), .cap = milliseconds(60'000), .jitter = milliseconds(1000)};
    /// Business attempts (the first one included) before the job is dead-lettered. Default 5.
    std::uint32_t max_business_attempts = 5;
    /// Redis or database failures, lost leases and "retry later". Default 250 ms base, 10 s cap,
    /// 250 ms jitter. Never dead-lettered: an outage is not the job's fault.
    RetryPolicy infrastructure{.base = milliseconds(250), .cap = milliseconds(10'000), .jitter = milliseconds(250)};

    std::expected<void, OptionError> validate() const;
};

/// Why a handler did not complete its job.
struct JobFailure {
    enum class Kind {
        /// The work failed: retried under the business policy, dead-lettered after the maximum.
        business,
        /// Not now (EX_TEMPFAIL, exit 75): retried under the infrastructure policy, not counted
        /// as a business failure.
        retry_later,
        /// Will never succeed: dead-lettered at once.
        permanent,
    };
    Kind kind = Kind::business;
    std::string reason;

    static JobFailure business(std::string reason) { return {Kind::business, std::move(reason)}; }
    static JobFailure retry_later(std::string reason) { return {Kind::retry_later, std::move(reason)}; }
    static JobFailure permanent(std::string reason) { return {Kind::permanent, std::move(reason)}; }
};

/// What the per-job protocol decided; the transport acts on it.
enum class Verdict {
    /// The effect committed: acknowledge.
    completed,
    /// The idempotency key had already completed: acknowledge, count a duplicate.
    duplicate,
    /// The resource is held by another worker: requeue after the contention delay.
    requeue_contended,
    /// The handler failed: requeue after the business delay.
    retry_business,
    /// The handler asked to be run again later: requeue after the infrastructure delay.
    retry_later,
    /// Redis or the database failed: requeue after the infrastructure delay and back off.
    retry_infrastructure,
    /// The lease was lost (or the store found a newer fence) before the effect committed:
    /// nothing was written; requeue after the infrastructure delay.
    lease_lost,
    /// Out of business attempts, or a permanent failure: move to the dead-letter stream.
    dead,
    /// Cancelled by a shutdown before completion: nothing was written; leave the entry
    /// unacknowledged so the queue redelivers it.
    cancelled,
};

/// Why the protocol reached its verdict, as a type observers read (metrics count fence
/// rejections by it). Verdicts say what happens to the job; causes say what happened to the
/// attempt, and tell apart what one verdict merges: `lease_lost` comes from `lease_lost` (the
/// lease ran out) or `stale_fence` (the store refused the job's fence). Decision::reason is
/// prose for logs and the dead-letter stream; nothing parses it.
enum class DecisionCause {
    /// completed or duplicate: nothing went wrong.
    none,
    /// Another worker holds the resource (requeue_contended).
    contention,
    /// The handler failed, threw, or aborted its transaction with an error of its own; the
    /// JobFailure's kind chose retry_business, retry_later or dead.
    handler,
    /// The store failed with a fatal error (a broken statement or schema): counted as a
    /// business failure, since it does not heal by waiting.
    store_fatal,
    /// Redis or the store failed or timed out, or the store has no guard row for the resource.
    infrastructure,
    /// The lease was lost while the handler ran or before commit: nothing was written.
    lease_lost,
    /// The store holds a newer fence than the job's lease and refused the commit: a stale
    /// write fencing stopped.
    stale_fence,
    /// A shutdown cancelled the attempt.
    shutdown,
    /// The entry was delivered more than max_deliveries times without an outcome.
    too_many_deliveries,
    /// The queue entry could not be decoded into a job.
    malformed_entry,
};

std::string_view to_string(Verdict v) noexcept;
std::string_view to_string(JobFailure::Kind k) noexcept;
std::string_view to_string(DecisionCause c) noexcept;

struct Decision {
    Verdict verdict = Verdict::cancelled;
    /// What led to the verdict (set where the decision is made).
    DecisionCause cause = DecisionCause::none;
    /// The job with its counters updated for this attempt (what a requeue stores).
    Job job;
    /// Requeue verdicts: how long the job waits before it is ready again.
    milliseconds delay{0};
    /// Failures: what went wrong (stored as the job's last_error / dead-letter reason).
    std::string reason;
    /// Set when the lease was acquired.
    std::optional<FencingToken> fence;
    /// retry_infrastructure: the Redis or store error.
    std::error_code error;

    /// completed, duplicate: the entry can be acknowledged.
    bool acknowledges() const noexcept { return verdict == Verdict::completed || verdict == Verdict::duplicate; }
    /// The verdicts that put the job back with a delay.
    bool requeues() const noexcept;
};

}  // namespace fencelock
