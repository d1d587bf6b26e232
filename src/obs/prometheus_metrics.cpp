#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <mutex>
#include <stdexcept>
#include <vector>

#include "fencelock/metrics.hpp"
#include "fencelock/version.hpp"
#include "obs/redis_health.hpp"

namespace fencelock {
namespace {

using prometheus::Counter;
using prometheus::Family;
using prometheus::Gauge;
using prometheus::Histogram;

// Lock waits and holds: from sub-millisecond to minutes.
Histogram::BucketBoundaries seconds_buckets() {
    return {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300};
}

double seconds(std::chrono::microseconds d) { return static_cast<double>(d.count()) / 1e6; }

}  // namespace

struct PrometheusMetrics::Families {
    Families(prometheus::Registry& r, const std::string& p)
        : acquire(prometheus::BuildCounter()
                      .Name(p + "lock_acquire_total")
                      .Help("Lock acquisitions by result")
                      .Register(r)),
          acquire_duration(prometheus::BuildHistogram()
                               .Name(p + "lock_acquire_duration_seconds")
                               .Help("Time from the first attempt to the outcome of an acquisition")
                               .Register(r)),
          contention(prometheus::BuildCounter()
                         .Name(p + "lock_contention_total")
                         .Help("Acquisition attempts that found the lock held, by resource type")
                         .Register(r)),
          hold_duration(prometheus::BuildHistogram()
                            .Name(p + "lock_hold_duration_seconds")
                            .Help("Time from acquisition to release or loss of a held lease")
                            .Register(r)),
          renew(prometheus::BuildCounter().Name(p + "lock_renew_total").Help("Lease renewals by result").Register(r)),
          lease_lost(
              prometheus::BuildCounter().Name(p + "lock_lease_lost_total").Help("Leases lost, by reason").Register(r)),
          release(prometheus::BuildCounter().Name(p + "lock_release_total").Help("Releases by result").Register(r)),
          fence_rejected(prometheus::BuildCounter()
                             .Name(p + "fence_rejected_total")
                             .Help("Writes the store refused because their fence was stale")
                             .Register(r)),
          redis_errors(prometheus::BuildCounter()
                           .Name(p + "redis_errors_total")
                           .Help("Redis calls that failed (transport or server errors), by who sent them")
                           .Register(r)),
          clock_behind(prometheus::BuildCounter()
                           .Name(p + "clock_behind_total")
                           .Help("Grants whose Redis server's clock was behind its fence counter (clock skew)")
                           .Register(r)),
          clock_skew(prometheus::BuildGauge()
                         .Name(p + "clock_skew_seconds")
                         .Help("How far behind its fence counter the Redis server's clock was at the last such grant")
                         .Register(r)),
          acquire_seconds(acquire_duration.Add({}, seconds_buckets())),
          hold_seconds(hold_duration.Add({}, seconds_buckets())),
          fence_rejected_count(fence_rejected.Add({})),
          clock_behind_count(clock_behind.Add({})),
          clock_skew_seconds(clock_skew.Add({})) {
        // Every label value that is known in advance exists from the start, so dashboards and
        // alerts see zeros instead of missing series.
        for (auto r : {AcquireResult::acquired, AcquireResult::contended, AcquireResult::timeout, AcquireResult::error})
            acquire.Add({{"result", std::string(to_string(r))}});
        using Renewed = std::expected<RenewStatus, std::error_code>;
        for (const Renewed& r : {Renewed(RenewStatus::renewed), Renewed(RenewStatus::not_owner),
                                 Renewed(RenewStatus::max_hold_exceeded), Renewed(std::unexpected(std::error_code{}))})
            renew.Add({{"result", std::string(result_label(r))}});
        using Released = std::expected<ReleaseStatus, std::error_code>;
        for (const Released& r : {Released(ReleaseStatus::released), Released(ReleaseStatus::not_owner),
                                  Released(ReleaseStatus::not_held), Released(std::unexpected(std::error_code{}))})
            release.Add({{"result", std::string(result_label(r))}});
        for (auto reason :
             {LossReason::not_owner, LossReason::max_hold_exceeded, LossReason::expired, LossReason::clock_step})
            lease_lost.Add({{"reason", std::string(to_string(reason))}});
        for (const char* source : {"client", "keeper"}) redis_errors.Add({{"source", source}});
    }

    Family<Counter>& acquire;
    Family<Histogram>& acquire_duration;
    Family<Counter>& contention;
    Family<Histogram>& hold_duration;
    Family<Counter>& renew;
    Family<Counter>& lease_lost;
    Family<Counter>& release;
    Family<Counter>& fence_rejected;
    Family<Counter>& redis_errors;
    Family<Counter>& clock_behind;
    Family<Gauge>& clock_skew;
    Histogram& acquire_seconds;
    Histogram& hold_seconds;
    Counter& fence_rejected_count;
    Counter& clock_behind_count;
    Gauge& clock_skew_seconds;
};

// The queue's families, registered only in a process that runs jobs: a lock-only process
// (fencelock run) exports no job_* series that would read as a worker doing nothing.
struct PrometheusMetrics::JobFamilies {
    JobFamilies(prometheus::Registry& r, const std::string& p, Family<Counter>& redis_errors)
        : job_retry(prometheus::BuildCounter()
                        .Name(p + "job_retry_total")
                        .Help("Jobs put back for a retry, by reason")
                        .Register(r)),
          job_requeue(
              prometheus::BuildCounter().Name(p + "job_requeue_total").Help("Jobs requeued with a delay").Register(r)),
          job_aborted(prometheus::BuildCounter()
                          .Name(p + "job_aborted_total")
                          .Help("Job executions abandoned, by reason")
                          .Register(r)),
          job_duplicate(prometheus::BuildCounter()
                            .Name(p + "job_duplicate_total")
                            .Help("Jobs whose idempotency key was already completed")
                            .Register(r)),
          job_completed(prometheus::BuildCounter()
                            .Name(p + "job_completed_total")
                            .Help("Jobs completed and acknowledged by this process")
                            .Register(r)),
          job_dead(prometheus::BuildCounter()
                       .Name(p + "job_dead_total")
                       .Help("Jobs this process moved to the dead-letter stream")
                       .Register(r)),
          requeued(job_requeue.Add({})),
          duplicates(job_duplicate.Add({})),
          completed(job_completed.Add({})),
          dead(job_dead.Add({})) {
        for (const char* reason : {"contention", "business", "infrastructure"}) job_retry.Add({{"reason", reason}});
        for (const char* reason : {"lease_lost", "shutdown"}) job_aborted.Add({{"reason", reason}});
        redis_errors.Add({{"source", "worker"}});
    }

    Family<Counter>& job_retry;
    Family<Counter>& job_requeue;
    Family<Counter>& job_aborted;
    Family<Counter>& job_duplicate;
    Family<Counter>& job_completed;
    Family<Counter>& job_dead;
    Counter& requeued;
    Counter& duplicates;
    Counter& completed;
    Counter& dead;
};

PrometheusMetrics::PrometheusMetrics(prometheus::Registry& registry, MetricsOptions options)
    : registry_(registry),
      f_(std::make_unique<Families>(registry, options.name_prefix)),
      options_(std::move(options)),
      health_(std::make_unique<detail::RedisHealth>()) {
    for (const auto& type : options_.resource_types) f_->contention.Add({{"resource_type", type}});
    // Which build a process runs, for dashboards that span a rollout: always 1.
    prometheus::BuildGauge()
        .Name(options_.name_prefix + "build_info")
        .Help("The fencelock version and revision this process runs (always 1)")
        .Register(registry)
        .Add({{"version", std::string(version())}, {"revision", std::string(revision())}})
        .Set(1);
}

PrometheusMetrics::~PrometheusMetrics() = default;

std::string PrometheusMetrics::resource_type(std::string_view resource) const {
    const auto at = resource.find(options_.resource_type_separator);
    if (at == std::string_view::npos || at == 0) return "untyped";
    return std::string(resource.substr(0, at));
}

// The observer methods must not throw: prometheus-cpp only allocates here, and a failed
// allocation is not worth taking a worker down for.
// Contention counts attempts, not outcomes: an acquisition that waited through three refusals
// and then got the lock adds three. Each failed attempt is a Redis error of the client.
void PrometheusMetrics::on_acquire(const AcquireEvent& e) noexcept {
    try {
        f_->acquire.Add({{"result", std::string(to_string(e.result))}}).Increment();
        if (e.result != AcquireResult::error) f_->acquire_seconds.Observe(seconds(e.waited));
        if (e.contended_attempts > 0)
            f_->contention.Add({{"resource_type", resource_type(e.resource.str())}}).Increment(e.contended_attempts);
        if (e.failed_attempts > 0) f_->redis_errors.Add({{"source", "client"}}).Increment(e.failed_attempts);
        // Readiness follows how the acquisition ended: a refusal or a wait that ran out is an
        // answer from Redis, an error is not.
        if (e.result == AcquireResult::error || e.error) health_->failed("client", e.error);
        else health_->answered();
        if (e.clock_behind) {
            f_->clock_behind_count.Increment();
            f_->clock_skew_seconds.Set(seconds(*e.clock_behind));
        }
    } catch (...) {
    }
}

void PrometheusMetrics::on_renew(const RenewEvent& e) noexcept {
    try {
        f_->renew.Add({{"result", std::string(result_label(e.result))}}).Increment();
        if (!e.result) redis_failed(e.kept ? "keeper" : "client", e.result.error());
        else health_->answered();
    } catch (...) {
    }
}

void PrometheusMetrics::on_release(const ReleaseEvent& e) noexcept {
    try {
        f_->release.Add({{"result", std::string(result_label(e.result))}}).Increment();
        if (e.held_for && e.result == ReleaseStatus::released) f_->hold_seconds.Observe(seconds(*e.held_for));
        if (!e.result) redis_failed("client", e.result.error());
        else health_->answered();
    } catch (...) {
    }
}

void PrometheusMetrics::on_lease_lost(const LossEvent& e) noexcept {
    try {
        f_->lease_lost.Add({{"reason", std::string(to_string(e.reason))}}).Increment();
        f_->hold_seconds.Observe(seconds(e.held_for));
    } catch (...) {
    }
}

void PrometheusMetrics::on_fence_rejected(const FenceRejectedEvent& e) noexcept { fence_rejected(e.resource); }

void PrometheusMetrics::fence_rejected(std::string_view) noexcept { f_->fence_rejected_count.Increment(); }

void PrometheusMetrics::redis_error(std::string_view source) noexcept { redis_failed(source, {}); }

void PrometheusMetrics::redis_failed(std::string_view source, std::error_code error) noexcept {
    health_->failed(source, error);
    try {
        f_->redis_errors.Add({{"source", std::string(source)}}).Increment();
    } catch (...) {
    }
}

void PrometheusMetrics::redis_answered(std::string_view) noexcept { health_->answered(); }

Readiness PrometheusMetrics::redis_readiness() const { return health_->state(); }

void PrometheusMetrics::export_job_metrics() {
    std::call_once(jobs_once_,
                   [&] { jobs_ = std::make_unique<JobFamilies>(registry_, options_.name_prefix, f_->redis_errors); });
}

// The job counters register their families on first use when no QueueMetricsObserver did.
PrometheusMetrics::JobFamilies* PrometheusMetrics::jobs() noexcept {
    try {
        export_job_metrics();
    } catch (...) {
    }
    return jobs_.get();
}

void PrometheusMetrics::job_completed() noexcept {
    if (auto* j = jobs()) j->completed.Increment();
}

void PrometheusMetrics::job_dead() noexcept {
    if (auto* j = jobs()) j->dead.Increment();
}

void PrometheusMetrics::job_retry(std::string_view reason) noexcept {
    try {
        if (auto* j = jobs()) j->job_retry.Add({{"reason", std::string(reason)}}).Increment();
    } catch (...) {
    }
}

void PrometheusMetrics::job_requeued() noexcept {
    if (auto* j = jobs()) j->requeued.Increment();
}

void PrometheusMetrics::job_aborted(std::string_view reason) noexcept {
    try {
        if (auto* j = jobs()) j->job_aborted.Add({{"reason", std::string(reason)}}).Increment();
    } catch (...) {
    }
}

void PrometheusMetrics::job_duplicate() noexcept {
    if (auto* j = jobs()) j->duplicates.Increment();
}

}  // namespace fencelock
