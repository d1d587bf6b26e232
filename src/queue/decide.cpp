#include "queue/decide.hpp"

#include <algorithm>
#include <limits>

namespace fencelock {

milliseconds retry_delay(const RetryPolicy& policy, std::uint32_t attempt, std::mt19937_64& rng) noexcept {
    // base * 2^attempt without overflow: stop doubling once the cap is reached.
    milliseconds d = policy.base;
    for (std::uint32_t i = 0; i < attempt && d < policy.cap; ++i) d = d > policy.cap / 2 ? policy.cap : d * 2;
    d = std::min(d, policy.cap);
    if (policy.jitter > milliseconds::zero()) {
        std::uniform_int_distribution<milliseconds::rep> jitter(0, policy.jitter.count());
        d += milliseconds(jitter(rng));
    }
    return d;
}

std::string_view to_string(Verdict v) noexcept {
    switch (v) {
        case Verdict::completed: return "completed";
        case Verdict::duplicate: return "duplicate";
        case Verdict::requeue_contended: return "requeue_contended";
        case Verdict::retry_business: return "retry_business";
        case Verdict::retry_later: return "retry_later";
        case Verdict::retry_infrastructure: return "retry_infrastructure";
        case Verdict::lease_lost: return "lease_lost";
        case Verdict::dead: return "dead";
        case Verdict::cancelled: return "cancelled";
    }
    return "unknown";
}

std::string_view to_string(JobFailure::Kind k) noexcept {
    switch (k) {
        case JobFailure::Kind::business: return "business";
        case JobFailure::Kind::retry_later: return "retry_later";
        case JobFailure::Kind::permanent: return "permanent";
    }
    return "unknown";
}

std::string_view to_string(DecisionCause c) noexcept {
    switch (c) {
        case DecisionCause::none: return "none";
        case DecisionCause::contention: return "contention";
        case DecisionCause::handler: return "handler";
        case DecisionCause::store_fatal: return "store_fatal";
        case DecisionCause::infrastructure: return "infrastructure";
        case DecisionCause::lease_lost: return "lease_lost";
        case DecisionCause::stale_fence: return "stale_fence";
        case DecisionCause::shutdown: return "shutdown";
        case DecisionCause::too_many_deliveries: return "too_many_deliveries";
        case DecisionCause::malformed_entry: return "malformed_entry";
    }
    return "unknown";
}

bool Decision::requeues() const noexcept {
    switch (verdict) {
        case Verdict::requeue_contended:
        case Verdict::retry_business:
        case Verdict::retry_later:
        case Verdict::retry_infrastructure:
        case Verdict::lease_lost: return true;
        default: return false;
    }
}

namespace detail {
namespace {

class AbortCategory final : public std::error_category {
public:
    const char* name() const noexcept override { return "fencelock.queue.abort"; }
    std::string message(int c) const override {
        switch (static_cast<abort_reason>(c)) {
            case abort_reason::handler_failed: return "the handler failed";
            case abort_reason::lease_lost: return "the lease was lost before commit";
            case abort_reason::cancelled: return "the attempt was cancelled";
            case abort_reason::probe: return "probe before an external handler";
        }
        return "unknown abort reason";
    }
};

std::uint32_t plus_one(std::uint32_t n) { return n == std::numeric_limits<std::uint32_t>::max() ? n : n + 1; }

Decision make(Verdict v, DecisionCause cause, const Job& job, std::optional<FencingToken> fence) {
    return Decision{
        .verdict = v, .cause = cause, .job = job, .delay = milliseconds(0), .reason = {}, .fence = fence, .error = {}};
}

Decision infrastructure_like(Verdict v, DecisionCause cause, const Job& job, std::optional<FencingToken> fence,
                             std::string reason, const RetryPolicies& p, std::mt19937_64& rng) {
    Decision d = make(v, cause, job, fence);
    d.delay = retry_delay(p.infrastructure, job.infrastructure_attempts, rng);
    d.job.infrastructure_attempts = plus_one(job.infrastructure_attempts);
    d.job.last_error = reason;
    d.reason = std::move(reason);
    return d;
}

}  // namespace

const std::error_category& abort_category() noexcept {
    static const AbortCategory category;
    return category;
}

Decision decide_contended(const Job& job, const RetryPolicies& p, std::mt19937_64& rng) {
    Decision d = make(Verdict::requeue_contended, DecisionCause::contention, job, std::nullopt);
    d.delay = retry_delay(p.contention, job.contention_attempts, rng);
    d.job.contention_attempts = plus_one(job.contention_attempts);
    return d;
}

Decision decide_infrastructure(const Job& job, std::optional<FencingToken> fence, std::error_code error,
                               std::string reason, const RetryPolicies& p, std::mt19937_64& rng) {
    Decision d = infrastructure_like(Verdict::retry_infrastructure, DecisionCause::infrastructure, job, fence,
                                     std::move(reason), p, rng);
    d.error = error;
    return d;
}

Decision decide_lease_lost(const Job& job, std::optional<FencingToken> fence, std::string reason,
                           const RetryPolicies& p, std::mt19937_64& rng) {
    return infrastructure_like(Verdict::lease_lost, DecisionCause::lease_lost, job, fence, std::move(reason), p, rng);
}

Decision decide_failure(const Job& job, std::optional<FencingToken> fence, const JobFailure& failure,
                        const RetryPolicies& p, std::mt19937_64& rng) {
    switch (failure.kind) {
        case JobFailure::Kind::retry_later:
            return infrastructure_like(Verdict::retry_later, DecisionCause::handler, job, fence, failure.reason, p,
                                       rng);
        case JobFailure::Kind::permanent: {
            Decision d = make(Verdict::dead, DecisionCause::handler, job, fence);
            d.job.business_attempts = plus_one(job.business_attempts);
            d.reason = "permanent failure: " + failure.reason;
            d.job.last_error = d.reason;
            return d;
        }
        case JobFailure::Kind::business: break;
    }
    Decision d = make(Verdict::retry_business, DecisionCause::handler, job, fence);
    d.job.business_attempts = plus_one(job.business_attempts);
    d.job.last_error = failure.reason;
    if (d.job.business_attempts >= p.max_business_attempts) {
        d.verdict = Verdict::dead;
        d.reason = "failed " + std::to_string(d.job.business_attempts) + " times, last: " + failure.reason;
        return d;
    }
    d.reason = failure.reason;
    d.delay = retry_delay(p.business, job.business_attempts, rng);
    return d;
}

Decision decide_cancelled(const Job& job, std::optional<FencingToken> fence) {
    Decision d = make(Verdict::cancelled, DecisionCause::shutdown, job, fence);
    d.reason = "cancelled by shutdown";
    return d;
}

Decision decide_too_many_deliveries(const Job& job, std::uint32_t max_deliveries) {
    Decision d = make(Verdict::dead, DecisionCause::too_many_deliveries, job, std::nullopt);
    d.reason = "delivered " + std::to_string(job.deliveries) + " times without an outcome (limit " +
               std::to_string(max_deliveries) + "; do workers crash on it?)";
    d.job.last_error = d.reason;
    return d;
}

Decision decide_handler_failure(const Job& job, FencingToken fence, const AttemptState& s, const RetryPolicies& p,
                                std::mt19937_64& rng) {
    if (s.lease_lost) return decide_lease_lost(job, fence, "lease lost while the handler ran", p, rng);
    if (s.cancelled) return decide_cancelled(job, fence);
    return decide_failure(job, fence, s.failure.value_or(JobFailure::business("handler failed")), p, rng);
}

Decision decide_transact(const Job& job, FencingToken fence, const StoreResult<TransactResult>& r,
                         const AttemptState& s, const RetryPolicies& p, std::mt19937_64& rng) {
    if (!r) {
        const auto& e = r.error();
        std::string reason = "store: " + to_name(e.code) + (e.detail.empty() ? "" : ": " + e.detail);
        if (classify_store_error(e.code) == failure_kind::fatal) {
            Decision d = decide_failure(job, fence, JobFailure::business(std::move(reason)), p, rng);
            d.cause = DecisionCause::store_fatal;
            return d;
        }
        return decide_infrastructure(job, fence, e.code, std::move(reason), p, rng);
    }
    switch (r->status) {
        case TransactStatus::committed: return make(Verdict::completed, DecisionCause::none, job, fence);
        case TransactStatus::duplicate: {
            // The key recorded under this execution's own fence is this execution's completion
            // (an external command records it with FENCELOCK_IDEMPOTENCY_KEY, as it should), not
            // an earlier one: a fence is issued to one ownership only, and each execution of a
            // job holds a lease of its own (DESIGN.md, "Invariants and why they hold", 1 and 2).
            if (r->first && r->first->fence == fence && r->first->resource == job.resource.str())
                return make(Verdict::completed, DecisionCause::none, job, fence);
            Decision d = make(Verdict::duplicate, DecisionCause::none, job, fence);
            if (r->first) d.reason = "already completed with fence " + std::to_string(r->first->fence.value());
            return d;
        }
        case TransactStatus::stale: {
            Decision d = decide_lease_lost(job, fence,
                                           "stale fence " + std::to_string(fence.value()) + ": the store holds " +
                                               std::to_string(r->last_fence.value()),
                                           p, rng);
            d.cause = DecisionCause::stale_fence;
            return d;
        }
        case TransactStatus::not_found:
            return decide_infrastructure(job, fence, {}, "the store has no guard row for the resource", p, rng);
        case TransactStatus::aborted: break;
    }
    const std::error_code cause = r->cause ? r->cause->code : std::error_code{};
    if (cause == abort_reason::lease_lost) return decide_lease_lost(job, fence, "lease lost before commit", p, rng);
    if (cause == abort_reason::cancelled) return decide_cancelled(job, fence);
    if (cause == abort_reason::handler_failed) return decide_handler_failure(job, fence, s, p, rng);
    // Another error code returned by the handler's own mutation code: treat as its failure.
    return decide_failure(job, fence, JobFailure::business(r->cause ? r->cause->detail : std::string("aborted")), p,
                          rng);
}

}  // namespace detail
}  // namespace fencelock
