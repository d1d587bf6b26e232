// The per-job protocol's pure decisions: retry delays, counters and the verdict mapping. No
// servers.
#include <gtest/gtest.h>

#include "fencelock/queue.hpp"
#include "queue/decide.hpp"
#include "queue/streams_codec.hpp"

namespace fencelock {
namespace {

using detail::AttemptState;
using std::chrono::milliseconds;

Job job() {
    return Job{.id = "0123456789abcdef0123456789abcdef",
               .queue = "q",
               .resource = ResourceName::make("r").value(),
               .idempotency_key = "k",
               .payload = "{}",
               .contention_attempts = 0,
               .business_attempts = 0,
               .infrastructure_attempts = 0,
               .deliveries = 1,
               .last_error = {}};
}

TEST(RetryDelay, DoublesUpToTheCapPlusJitter) {
    std::mt19937_64 rng(1);
    const RetryPolicy p{.base = milliseconds(500), .cap = milliseconds(30'000), .jitter = milliseconds(0)};
    EXPECT_EQ(retry_delay(p, 0, rng), milliseconds(500));
    EXPECT_EQ(retry_delay(p, 1, rng), milliseconds(1000));
    EXPECT_EQ(retry_delay(p, 5, rng), milliseconds(16'000));
    EXPECT_EQ(retry_delay(p, 6, rng), milliseconds(30'000));
    EXPECT_EQ(retry_delay(p, 4'000'000'000u, rng), milliseconds(30'000));  // no overflow
    const RetryPolicy j{.base = milliseconds(500), .cap = milliseconds(30'000), .jitter = milliseconds(1000)};
    milliseconds lo = milliseconds::max(), hi = milliseconds::min();
    for (int i = 0; i < 2000; ++i) {
        const auto d = retry_delay(j, 2, rng);
        lo = std::min(lo, d);
        hi = std::max(hi, d);
    }
    EXPECT_GE(lo, milliseconds(2000));
    EXPECT_LE(hi, milliseconds(3000));
    EXPECT_LT(lo, milliseconds(2100));  // the jitter really spreads
    EXPECT_GT(hi, milliseconds(2900));
}

TEST(RetryPolicies, DefaultsAndValidation) {
    const RetryPolicies p;
    EXPECT_EQ(p.contention.base, milliseconds(500));
    EXPECT_EQ(p.contention.cap, milliseconds(30'000));
    EXPECT_EQ(p.contention.jitter, milliseconds(1000));
    EXPECT_EQ(p.max_business_attempts, 5u);
    EXPECT_TRUE(p.validate());
    RetryPolicies bad;
    bad.business.cap = milliseconds(1);
    ASSERT_FALSE(bad.validate());
    EXPECT_EQ(bad.validate().error().field, "retry.business.cap");
    bad = {};
    bad.max_business_attempts = 0;
    EXPECT_EQ(bad.validate().error().field, "retry.max_business_attempts");
}

TEST(ProcessorOptions, ReplicaAcknowledgementIsOffByDefaultAndChecked) {
    const ProcessorOptions p;
    EXPECT_EQ(p.replicas, 0u);
    EXPECT_EQ(p.replica_timeout, milliseconds(200));
    EXPECT_TRUE(p.validate());
    const ProcessorOptions too_many{.replicas = 101};
    EXPECT_EQ(too_many.validate().error().field, "replicas");
    const ProcessorOptions forever{.replicas = 1, .replica_timeout = milliseconds(0)};  // WAIT 0 never ends
    EXPECT_EQ(forever.validate().error().field, "replica_timeout");
    const ProcessorOptions two{.replicas = 2, .replica_timeout = milliseconds(50)};
    EXPECT_TRUE(two.validate());
}

TEST(Decide, ContentionIsCountedApartAndNeverAFailure) {
    std::mt19937_64 rng(2);
    RetryPolicies p;
    p.contention.jitter = milliseconds(0);
    Job j = job();
    j.business_attempts = 2;
    j.contention_attempts = 3;
    const Decision d = detail::decide_contended(j, p, rng);
    EXPECT_EQ(d.verdict, Verdict::requeue_contended);
    EXPECT_TRUE(d.requeues());
    EXPECT_EQ(d.job.contention_attempts, 4u);
    EXPECT_EQ(d.job.business_attempts, 2u);
    EXPECT_EQ(d.delay, milliseconds(4000));  // 500 * 2^3: counted from the attempts before
    EXPECT_EQ(d.cause, DecisionCause::contention);
}

TEST(Decide, BusinessFailuresRetryThenDie) {
    std::mt19937_64 rng(3);
    RetryPolicies p;
    p.business.jitter = milliseconds(0);
    Job j = job();
    for (std::uint32_t n = 1; n < p.max_business_attempts; ++n) {
        const Decision d = detail::decide_failure(j, FencingToken(7), JobFailure::business("boom"), p, rng);
        ASSERT_EQ(d.verdict, Verdict::retry_business) << n;
        EXPECT_EQ(d.job.business_attempts, n);
        EXPECT_EQ(d.delay, retry_delay(p.business, n - 1, rng));
        EXPECT_EQ(d.reason, "boom");
        EXPECT_EQ(d.cause, DecisionCause::handler);
        j = d.job;
    }
    const Decision last = detail::decide_failure(j, FencingToken(7), JobFailure::business("boom"), p, rng);
    EXPECT_EQ(last.verdict, Verdict::dead);
    EXPECT_EQ(last.job.business_attempts, 5u);
    EXPECT_EQ(last.reason, "failed 5 times, last: boom");
    EXPECT_EQ(last.cause, DecisionCause::handler);
    EXPECT_FALSE(last.requeues());
    EXPECT_FALSE(last.acknowledges());

    const Decision perm = detail::decide_failure(job(), FencingToken(1), JobFailure::permanent("bad payload"), p, rng);
    EXPECT_EQ(perm.verdict, Verdict::dead);
    EXPECT_EQ(perm.reason, "permanent failure: bad payload");
    EXPECT_EQ(perm.cause, DecisionCause::handler);

    const Decision later = detail::decide_failure(job(), FencingToken(1), JobFailure::retry_later("busy"), p, rng);
    EXPECT_EQ(later.verdict, Verdict::retry_later);
    EXPECT_EQ(later.job.business_attempts, 0u);
    EXPECT_EQ(later.job.infrastructure_attempts, 1u);
    EXPECT_EQ(later.cause, DecisionCause::handler);
}

StoreResult<TransactResult> status(TransactStatus s, std::optional<StoreError> cause = std::nullopt) {
    TransactResult r;
    r.status = s;
    r.last_fence = FencingToken(9);
    r.cause = std::move(cause);
    return r;
}

TEST(Decide, TransactVerdicts) {
    std::mt19937_64 rng(4);
    const RetryPolicies p;
    const FencingToken f(8);
    EXPECT_EQ(detail::decide_transact(job(), f, status(TransactStatus::committed), {}, p, rng).verdict,
              Verdict::completed);
    EXPECT_EQ(detail::decide_transact(job(), f, status(TransactStatus::duplicate), {}, p, rng).verdict,
              Verdict::duplicate);
    const Decision stale = detail::decide_transact(job(), f, status(TransactStatus::stale), {}, p, rng);
    EXPECT_EQ(stale.verdict, Verdict::lease_lost);
    EXPECT_EQ(stale.job.infrastructure_attempts, 1u);
    EXPECT_EQ(stale.reason, "stale fence 8: the store holds 9");
    EXPECT_EQ(detail::decide_transact(job(), f, status(TransactStatus::not_found), {}, p, rng).verdict,
              Verdict::retry_infrastructure);

    auto aborted = [&](detail::abort_reason why, AttemptState s) {
        return detail::decide_transact(job(), f, status(TransactStatus::aborted, StoreError{make_error_code(why), ""}),
                                       s, p, rng);
    };
    EXPECT_EQ(aborted(detail::abort_reason::lease_lost, {}).verdict, Verdict::lease_lost);
    EXPECT_EQ(aborted(detail::abort_reason::cancelled, {}).verdict, Verdict::cancelled);
    AttemptState failed{.lease_lost = false, .cancelled = false, .failure = JobFailure::business("x")};
    EXPECT_EQ(aborted(detail::abort_reason::handler_failed, failed).verdict, Verdict::retry_business);
    // A failure seen after the lease was lost or during a cancellation is not the job's fault.
    failed.lease_lost = true;
    EXPECT_EQ(aborted(detail::abort_reason::handler_failed, failed).verdict, Verdict::lease_lost);
    failed.lease_lost = false;
    failed.cancelled = true;
    EXPECT_EQ(aborted(detail::abort_reason::handler_failed, failed).verdict, Verdict::cancelled);
}

// External mode: the command records its effect with FENCELOCK_IDEMPOTENCY_KEY, so the
// worker's completion record finds the key. Recorded under this execution's fence, it is this
// job's completion; recorded under another fence (an earlier execution), a duplicate.
TEST(Decide, KeyRecordedUnderOwnFenceIsThisCompletion) {
    std::mt19937_64 rng(5);
    const RetryPolicies p;
    const FencingToken f(8);
    auto recorded_with = [&](FencingToken fence, std::string resource) {
        TransactResult r;
        r.status = TransactStatus::duplicate;
        r.last_fence = f;
        r.first = Completion{.key = "k", .resource = std::move(resource), .fence = fence, .outcome = "v"};
        return detail::decide_transact(job(), f, r, {}, p, rng);
    };
    const std::string own = job().resource.str();
    EXPECT_EQ(recorded_with(f, own).verdict, Verdict::completed);
    const Decision earlier = recorded_with(FencingToken(5), own);
    EXPECT_EQ(earlier.verdict, Verdict::duplicate);
    EXPECT_EQ(earlier.reason, "already completed with fence 5");
    EXPECT_EQ(recorded_with(f, own + "-other").verdict, Verdict::duplicate);
}

// The cause is the typed contract observers read: a stale fence and a lost lease share the
// verdict lease_lost and differ only by cause; the reason text is for people.
TEST(Decide, CauseSaysWhatTheVerdictMerges) {
    std::mt19937_64 rng(7);
    const RetryPolicies p;
    const FencingToken f(8);
    auto transact = [&](TransactStatus s, std::optional<StoreError> cause = std::nullopt, AttemptState a = {}) {
        return detail::decide_transact(job(), f, status(s, std::move(cause)), a, p, rng);
    };
    auto aborted = [&](detail::abort_reason why, AttemptState a = {}) {
        return transact(TransactStatus::aborted, StoreError{make_error_code(why), ""}, a);
    };
    EXPECT_EQ(transact(TransactStatus::committed).cause, DecisionCause::none);
    EXPECT_EQ(transact(TransactStatus::duplicate).cause, DecisionCause::none);

    const Decision stale = transact(TransactStatus::stale);
    EXPECT_EQ(stale.verdict, Verdict::lease_lost);
    EXPECT_EQ(stale.cause, DecisionCause::stale_fence);
    const Decision lost = aborted(detail::abort_reason::lease_lost);
    EXPECT_EQ(lost.verdict, Verdict::lease_lost);
    EXPECT_EQ(lost.cause, DecisionCause::lease_lost);
    AttemptState failed{.lease_lost = true, .cancelled = false, .failure = JobFailure::business("x")};
    EXPECT_EQ(aborted(detail::abort_reason::handler_failed, failed).cause, DecisionCause::lease_lost);
    EXPECT_EQ(detail::decide_lease_lost(job(), f, "stale fence 1: a reason that looks stale", p, rng).cause,
              DecisionCause::lease_lost)
        << "the cause is set by the decision, never read from the reason";

    EXPECT_EQ(aborted(detail::abort_reason::cancelled).cause, DecisionCause::shutdown);
    failed = {.lease_lost = false, .cancelled = true, .failure = JobFailure::business("x")};
    EXPECT_EQ(aborted(detail::abort_reason::handler_failed, failed).cause, DecisionCause::shutdown);
    failed = {.lease_lost = false, .cancelled = false, .failure = JobFailure::business("x")};
    EXPECT_EQ(aborted(detail::abort_reason::handler_failed, failed).cause, DecisionCause::handler);
    const Decision own = transact(TransactStatus::aborted, StoreError{make_error_code(errc::unavailable), "mine"});
    EXPECT_EQ(own.verdict, Verdict::retry_business);
    EXPECT_EQ(own.cause, DecisionCause::handler);
    EXPECT_EQ(transact(TransactStatus::not_found).cause, DecisionCause::infrastructure);

    auto with = [&](store_errc e) {
        return detail::decide_transact(job(), f, std::unexpected(StoreError{make_error_code(e), "d"}), {}, p, rng);
    };
    EXPECT_EQ(with(store_errc::unavailable).cause, DecisionCause::infrastructure);
    EXPECT_EQ(with(store_errc::commit_unknown).cause, DecisionCause::infrastructure);
    const Decision broken = with(store_errc::statement_failed);
    EXPECT_EQ(broken.verdict, Verdict::retry_business);
    EXPECT_EQ(broken.cause, DecisionCause::store_fatal);

    EXPECT_EQ(
        detail::decide_infrastructure(job(), std::nullopt, make_error_code(errc::unavailable), "redis", p, rng).cause,
        DecisionCause::infrastructure);
    EXPECT_EQ(detail::decide_cancelled(job(), f).cause, DecisionCause::shutdown);
    EXPECT_EQ(detail::decide_too_many_deliveries(job(), 10).cause, DecisionCause::too_many_deliveries);
    EXPECT_EQ(to_string(DecisionCause::stale_fence), "stale_fence");
}

TEST(Decide, StoreErrorsByClass) {
    std::mt19937_64 rng(5);
    const RetryPolicies p;
    auto with = [&](store_errc e) {
        return detail::decide_transact(job(), FencingToken(3), std::unexpected(StoreError{make_error_code(e), "d"}), {},
                                       p, rng);
    };
    const Decision unknown = with(store_errc::commit_unknown);  // safe to retry: the key decides
    EXPECT_EQ(unknown.verdict, Verdict::retry_infrastructure);
    EXPECT_EQ(unknown.error, make_error_code(store_errc::commit_unknown));
    EXPECT_EQ(with(store_errc::unavailable).verdict, Verdict::retry_infrastructure);
    EXPECT_EQ(with(store_errc::timeout).verdict, Verdict::retry_infrastructure);
    EXPECT_EQ(with(store_errc::serialization_exhausted).verdict, Verdict::retry_infrastructure);
    const Decision broken = with(store_errc::statement_failed);
    EXPECT_EQ(broken.verdict, Verdict::retry_business);
    EXPECT_EQ(broken.job.business_attempts, 1u);
}

TEST(Decide, InfrastructureAndRedeliveryLimit) {
    std::mt19937_64 rng(6);
    RetryPolicies p;
    p.infrastructure.jitter = milliseconds(0);
    Job j = job();
    j.infrastructure_attempts = 2;
    const Decision d =
        detail::decide_infrastructure(j, std::nullopt, make_error_code(errc::unavailable), "redis", p, rng);
    EXPECT_EQ(d.verdict, Verdict::retry_infrastructure);
    EXPECT_EQ(d.delay, milliseconds(1000));
    EXPECT_EQ(d.job.infrastructure_attempts, 3u);
    j.deliveries = 11;
    const Decision dead = detail::decide_too_many_deliveries(j, 10);
    EXPECT_EQ(dead.verdict, Verdict::dead);
    EXPECT_NE(dead.reason.find("delivered 11 times"), std::string::npos);
}

TEST(Codec, RoundTripAndKeys) {
    Job j = job();
    j.contention_attempts = 3;
    j.business_attempts = 1;
    j.infrastructure_attempts = 2;
    j.deliveries = 4;
    j.last_error = "x";
    j.payload = "{\"a\":\"\\u0000\"}";
    detail::Reply fields = detail::Reply::make_array({});
    for (auto& s : detail::encode_job(j)) fields.elements.push_back(detail::Reply::make_string(s));
    auto back = detail::decode_job("q", fields, 2);
    ASSERT_TRUE(back) << back.error();
    EXPECT_EQ(back->id, j.id);
    EXPECT_EQ(back->resource, j.resource);
    EXPECT_EQ(back->payload, j.payload);
    EXPECT_EQ(back->contention_attempts, 3u);
    EXPECT_EQ(back->business_attempts, 1u);
    EXPECT_EQ(back->infrastructure_attempts, 2u);
    EXPECT_EQ(back->deliveries, 6u);
    EXPECT_EQ(back->last_error, "x");
    fields.elements[1] = detail::Reply::make_string("");  // no id
    EXPECT_FALSE(detail::decode_job("q", fields, 1));

    const auto k = detail::queue_keys("p:", "orders");
    EXPECT_EQ(k.stream, "p:queue:{orders}:stream");
    EXPECT_EQ(k.delayed, "p:queue:{orders}:delayed");
    EXPECT_EQ(k.dead, "p:queue:{orders}:dead");
    EXPECT_EQ(k.keys, "p:queue:{orders}:keys");
    EXPECT_EQ(k.stats, "p:queue:{orders}:stats");
    EXPECT_EQ(detail::new_job_id().size(), 32u);
    EXPECT_NE(detail::new_job_id(), detail::new_job_id());
}

TEST(QueueOptionsTest, Validation) {
    EXPECT_FALSE(QueueOptions{}.validate());
    EXPECT_EQ(QueueOptions{}.validate().error().field, "queue");
    EXPECT_FALSE(QueueOptions{.queue = "a{b"}.validate());
    EXPECT_FALSE(QueueOptions{.queue = "a b"}.validate());
    EXPECT_TRUE(QueueOptions{.queue = "orders.v1"}.validate());
    EXPECT_TRUE(WorkerOptions{}.validate());
    EXPECT_EQ(WorkerOptions{.concurrency = 0}.validate().error().field, "concurrency");
    EXPECT_EQ((WorkerOptions{.visibility_timeout = milliseconds(300), .heartbeat_every = milliseconds(200)})
                  .validate()
                  .error()
                  .field,
              "heartbeat_every");
    WorkerOptions w;
    w.processing.lease = milliseconds(1);
    EXPECT_EQ(w.validate().error().field, "lease");
}

}  // namespace
}  // namespace fencelock
