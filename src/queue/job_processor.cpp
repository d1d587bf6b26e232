// JobProcessor: one job, one lock attempt, the handler under a kept lease, the completion
// recorded with the job's idempotency key by a fenced transaction, the lease released.
#include <exception>
#include <random>

#include "fencelock/queue_processor.hpp"
#include "queue/decide.hpp"

namespace fencelock {
namespace {

std::mt19937_64& thread_rng() {
    thread_local std::mt19937_64 rng{std::random_device{}()};
    return rng;
}

/// not_found means the guard row was never created: create it (idempotent) and try once more.
StoreResult<TransactResult> transact_creating(FencedStore& store, const ResourceName& resource, FencingToken fence,
                                              const TransactOptions& options, const Mutation& mutation) {
    auto r = store.transact(resource, fence, options, mutation);
    if (!r || r->status != TransactStatus::not_found) return r;
    // The first job for a resource creates its guard row (idempotent), then tries once more.
    if (auto created = store.create_resource(resource); !created) return std::unexpected(created.error());
    return store.transact(resource, fence, options, mutation);
}

std::expected<void, StoreError> abort_with(detail::abort_reason reason) {
    return std::unexpected(StoreError{make_error_code(reason), std::string(make_error_code(reason).message())});
}

}  // namespace

std::expected<JobProcessor, OptionError> JobProcessor::create(LockClient& locks, FencedStore& store,
                                                              ProcessorOptions options) {
    if (auto ok = options.validate(); !ok) return std::unexpected(ok.error());
    return JobProcessor(locks, store, std::move(options));
}

/*
 * Why no effect runs without a lock and none commits after a loss.
 *
 * The handler runs only after hold() granted a lease (one attempt: a contended lock becomes a
 * requeue decision, a Redis error an infrastructure retry; no path turns an error into
 * "acquired"). Its stop token fires when the keeper loses the lease or the caller cancels.
 * In transactional mode the handler runs inside transact() with the lease's fence: after it
 * returns, the mutation checks the lease once more and rolls back if it was lost, so a handler
 * that ignored its stop token still writes nothing. The check and COMMIT are not one atomic step
 * - a lease can expire in between - and that gap is what the fence closes: the guard row is
 * locked for the whole transaction, so a newer holder's transaction on the resource waits for
 * ours and is then ordered after it, and the idempotency key (inserted first, unique) makes a
 * second execution of the same job a duplicate instead of a second effect.
 */
template <typename Run>
Decision JobProcessor::with_lease(const Job& job, std::stop_token cancel, Run&& run) {
    auto& rng = thread_rng();
    const auto& policies = options_.retry;
    auto holding = locks_->hold(job.resource,
                                AcquireOptions{.lease = options_.lease,
                                               .max_hold = options_.max_hold,
                                               .wait = milliseconds(0),
                                               .replicas = options_.replicas,
                                               .replica_timeout = options_.replica_timeout},
                                KeepOptions{}, {});
    // A promoted master's failover grace is the old master's leases running out: the lock is
    // taken, as far as anyone can know, so the job waits like any contended one.
    if (!holding && holding.error() == errc::failover_grace) return detail::decide_contended(job, policies, rng);
    if (!holding)
        return detail::decide_infrastructure(job, std::nullopt, holding.error(), "redis: " + holding.error().message(),
                                             policies, rng);
    if (!holding->acquired()) return detail::decide_contended(job, policies, rng);
    HeldLease& lease = *holding->lease;
    if (options_.observer) options_.observer->on_acquired(job, lease.fence());

    std::stop_source stop;
    std::stop_callback on_loss(lease.stop_token(), [&stop] { stop.request_stop(); });
    std::stop_callback on_cancel(cancel, [&stop] { stop.request_stop(); });
    Decision d = run(lease, stop.get_token());
    // A failed release needs no action: the lease runs out by itself, and the keeper already
    // stopped renewing it.
    (void)lease.release();
    return d;
}

Decision JobProcessor::process(const Job& job, const TransactionalHandler& handler, std::stop_token cancel) {
    return with_lease(job, cancel, [&](HeldLease& lease, std::stop_token stop) {
        const JobContext ctx{job, lease.fence(), lease.owner(), stop, lease};
        detail::AttemptState state;
        std::optional<std::string> exception;
        Mutation mutation = [&](Transaction& tx) -> std::expected<void, StoreError> {
            state = {};  // a retried attempt (deadlock, serialization failure) starts afresh
            auto result = handler(ctx, tx);
            state.lease_lost = lease.stop_token().stop_requested() || !lease.valid();
            state.cancelled = cancel.stop_requested();
            if (!result) {
                state.failure = std::move(result.error());
                return abort_with(detail::abort_reason::handler_failed);
            }
            if (state.lease_lost) return abort_with(detail::abort_reason::lease_lost);
            return {};
        };
        StoreResult<TransactResult> r;
        try {
            r = transact_creating(*store_, job.resource, lease.fence(),
                                  TransactOptions{.owner = lease.owner(), .idempotency_key = job.idempotency_key},
                                  mutation);
        } catch (const std::exception& e) {
            state.failure = JobFailure::business(std::string("exception: ") + e.what());
            return detail::decide_handler_failure(job, lease.fence(), state, options_.retry, thread_rng());
        } catch (...) {
            state.failure = JobFailure::business("exception of unknown type");
            return detail::decide_handler_failure(job, lease.fence(), state, options_.retry, thread_rng());
        }
        return detail::decide_transact(job, lease.fence(), r, state, options_.retry, thread_rng());
    });
}

Decision JobProcessor::process_external(const Job& job, const ExternalHandler& handler, std::stop_token cancel) {
    return with_lease(job, cancel, [&](HeldLease& lease, std::stop_token stop) {
        const JobContext ctx{job, lease.fence(), lease.owner(), stop, lease};
        const TransactOptions keyed{.owner = lease.owner(), .idempotency_key = job.idempotency_key};
        // Before an effect that cannot be rolled back: is the key already completed (a
        // redelivery), or does the store already hold a newer fence? The probe rolls back.
        Mutation probe = [](Transaction&) -> std::expected<void, StoreError> {
            return abort_with(detail::abort_reason::probe);
        };
        auto checked = transact_creating(*store_, job.resource, lease.fence(), keyed, probe);
        const bool clear = checked && checked->status == TransactStatus::aborted && checked->cause &&
                           checked->cause->code == detail::abort_reason::probe;
        if (!clear) return detail::decide_transact(job, lease.fence(), checked, {}, options_.retry, thread_rng());

        detail::AttemptState state;
        std::expected<void, JobFailure> result;
        try {
            result = handler(ctx);
        } catch (const std::exception& e) {
            result = std::unexpected(JobFailure::business(std::string("exception: ") + e.what()));
        } catch (...) {
            result = std::unexpected(JobFailure::business("exception of unknown type"));
        }
        state.lease_lost = lease.stop_token().stop_requested() || !lease.valid();
        state.cancelled = cancel.stop_requested();
        if (!result) {
            state.failure = std::move(result.error());
            return detail::decide_handler_failure(job, lease.fence(), state, options_.retry, thread_rng());
        }
        // The effect happened outside: record it even if the lease was lost meanwhile. The
        // record is fenced, so it commits only if no newer holder reached the store; otherwise
        // it is stale (lease_lost: retried, and the handler's own fenced write was refused too).
        Mutation record = [&job](Transaction& tx) -> std::expected<void, StoreError> {
            tx.set_outcome("completed job " + job.id);
            return {};
        };
        auto r = transact_creating(*store_, job.resource, lease.fence(), keyed, record);
        return detail::decide_transact(job, lease.fence(), r, detail::AttemptState{}, options_.retry, thread_rng());
    });
}

}  // namespace fencelock
