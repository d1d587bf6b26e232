#pragma once
// The per-job protocol's decisions as pure functions: no I/O, no clock; randomness comes from
// the caller's generator. JobProcessor feeds them with what happened (contended, a Redis
// error, the handler's result, the store's verdict); tests/unit/queue_decide_test.cpp checks them.
#include <optional>
#include <random>
#include <string>
#include <system_error>

#include "fencelock/queue_job.hpp"
#include "fencelock/store.hpp"

namespace fencelock::detail {

/// Why the processor rolled a transaction back (the error a mutation returns to transact(),
/// which reports it as TransactStatus::aborted with this cause). Internal category.
enum class abort_reason {
    handler_failed = 1,
    lease_lost,
    cancelled,
    /// External mode's check before the handler runs: the key, fence and guard row were
    /// examined and found fine; nothing is meant to commit.
    probe,
};
const std::error_category& abort_category() noexcept;
inline std::error_code make_error_code(abort_reason r) noexcept { return {static_cast<int>(r), abort_category()}; }

/// The lock was held by another worker: contention_attempts + 1, contention delay (counted from
/// the attempts before this one). Never a failure.
Decision decide_contended(const Job& job, const RetryPolicies& policies, std::mt19937_64& rng);

/// Redis or the database failed (or the guard row could not be found): infrastructure_attempts
/// + 1, infrastructure delay.
Decision decide_infrastructure(const Job& job, std::optional<FencingToken> fence, std::error_code error,
                               std::string reason, const RetryPolicies& policies, std::mt19937_64& rng);

/// The lease was lost, or the store holds a newer fence: nothing was written; infrastructure
/// attempts + 1, infrastructure delay.
Decision decide_lease_lost(const Job& job, std::optional<FencingToken> fence, std::string reason,
                           const RetryPolicies& policies, std::mt19937_64& rng);

/// The handler failed: business -> business_attempts + 1, then dead when the limit is reached,
/// else the business delay; retry_later -> like an infrastructure retry; permanent -> dead.
Decision decide_failure(const Job& job, std::optional<FencingToken> fence, const JobFailure& failure,
                        const RetryPolicies& policies, std::mt19937_64& rng);

/// Nothing committed because the attempt was cancelled (shutdown): leave the job as it is.
Decision decide_cancelled(const Job& job, std::optional<FencingToken> fence);

/// The entry was delivered more than `max_deliveries` times without an outcome: dead.
Decision decide_too_many_deliveries(const Job& job, std::uint32_t max_deliveries);

/// What the attempt saw besides the store's answer.
struct AttemptState {
    /// The lease was lost (stop token or valid() false) by the time the handler returned.
    bool lease_lost = false;
    /// The attempt was cancelled (shutdown deadline).
    bool cancelled = false;
    /// The handler's failure, if it failed.
    std::optional<JobFailure> failure;
};

/// Maps the store's answer to the completing transaction. committed -> completed;
/// duplicate -> duplicate, unless the key was recorded under `fence` on this resource: that
/// is this execution's own completion (an external command recorded it), so completed; stale -> lease_lost with cause
/// stale_fence; aborted -> by its cause (the handler's failure, a lost lease, a cancellation); not_found ->
/// retry_infrastructure (the processor creates the guard row and tries once more before asking); an error -> by its
/// class: retryable or outcome_unknown -> retry_infrastructure (the idempotency key makes the retry safe), fatal -> a
/// business failure (a broken statement or schema does not heal by waiting; the job dead-letters after the limit and
/// can be retried once fixed; cause store_fatal).
Decision decide_transact(const Job& job, FencingToken fence, const StoreResult<TransactResult>& result,
                         const AttemptState& state, const RetryPolicies& policies, std::mt19937_64& rng);

/// A handler outcome in external mode before anything is recorded: a failure seen while the
/// lease was lost counts as lease_lost, while cancelled as cancelled, else as the failure.
Decision decide_handler_failure(const Job& job, FencingToken fence, const AttemptState& state,
                                const RetryPolicies& policies, std::mt19937_64& rng);

}  // namespace fencelock::detail

template <>
struct std::is_error_code_enum<fencelock::detail::abort_reason> : std::true_type {};
