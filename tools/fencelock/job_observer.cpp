#include "job_observer.hpp"

namespace fencelock::cli {

// Contention retries are counted apart from business and infrastructure ones: a busy resource
// is not a failure.
void JobObserver::on_decision(const Decision& d) noexcept {
    PrometheusMetrics* m = o_.metrics();
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
    const bool bad = d.verdict == Verdict::dead || d.verdict == Verdict::lease_lost ||
                     d.verdict == Verdict::retry_business || d.verdict == Verdict::retry_infrastructure;
    o_.log().log(bad ? LogLevel::warn : LogLevel::info, "job_decision", d.job.resource.str(),
                 {{"job_id", d.job.id},
                  {"verdict", std::string(to_string(d.verdict))},
                  {"fence", d.fence ? std::to_string(d.fence->value()) : ""},
                  {"delay_ms", d.requeues() ? std::to_string(d.delay.count()) : ""},
                  {"reason", d.reason},
                  {"contention_attempts", std::to_string(d.job.contention_attempts)},
                  {"business_attempts", std::to_string(d.job.business_attempts)}});
}

void JobObserver::on_transport_error(std::error_code ec) noexcept {
    o_.log().log(LogLevel::warn, "queue_transport_error", "", {{"error", ec.message()}});
}

}  // namespace fencelock::cli
