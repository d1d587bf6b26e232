#include "fencelock/queue_metrics.hpp"

#include <string>
#include <utility>

namespace fencelock {

QueueMetricsObserver::QueueMetricsObserver(std::shared_ptr<PrometheusMetrics> metrics,
                                           std::shared_ptr<JsonLogObserver> log)
    : metrics_(std::move(metrics)), log_(std::move(log)) {}

// Contention retries are counted apart from business and infrastructure ones: a busy resource
// is not a failure. Fence rejections are told apart from other lost leases by the decision's
// cause, never by its reason text.
void QueueMetricsObserver::on_decision(const Decision& d) noexcept {
    PrometheusMetrics* m = metrics_.get();
    const char* retry = nullptr;
    switch (d.verdict) {
        case Verdict::requeue_contended: retry = "contention"; break;
        case Verdict::retry_business: retry = "business"; break;
        case Verdict::retry_later:
        case Verdict::retry_infrastructure: retry = "infrastructure"; break;
        case Verdict::lease_lost:
            retry = "infrastructure";
            if (m) m->job_aborted("lease_lost");
            if (m && d.cause == DecisionCause::stale_fence) m->fence_rejected(d.job.resource.str());
            break;
        case Verdict::duplicate:
            if (m) m->job_duplicate();
            break;
        case Verdict::cancelled:
            if (m) m->job_aborted("shutdown");
            break;
        default: break;
    }
    if (m && retry) {
        m->job_retry(retry);
        m->job_requeued();
    }
    if (!log_) return;
    const bool bad = d.verdict == Verdict::dead || d.verdict == Verdict::lease_lost ||
                     d.verdict == Verdict::retry_business || d.verdict == Verdict::retry_infrastructure;
    log_->log(bad ? LogLevel::warn : LogLevel::info, "job_decision", d.job.resource.str(),
              {{"job_id", d.job.id},
               {"verdict", std::string(to_string(d.verdict))},
               {"fence", d.fence ? std::to_string(d.fence->value()) : ""},
               {"delay_ms", d.requeues() ? std::to_string(d.delay.count()) : ""},
               {"reason", d.reason},
               {"contention_attempts", std::to_string(d.job.contention_attempts)},
               {"business_attempts", std::to_string(d.job.business_attempts)}});
}

void QueueMetricsObserver::on_transport_error(std::error_code ec) noexcept {
    if (log_) log_->log(LogLevel::warn, "queue_transport_error", "", {{"error", ec.message()}});
}

}  // namespace fencelock
