#include "fencelock/queue_metrics.hpp"

#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

namespace fencelock {

QueueMetricsObserver::QueueMetricsObserver(std::shared_ptr<PrometheusMetrics> metrics,
                                           std::shared_ptr<JsonLogObserver> log)
    : metrics_(std::move(metrics)), log_(std::move(log)) {
    // This process runs jobs: its job families exist from the start, at zero.
    if (metrics_) metrics_->export_job_metrics();
}

// Contention retries are counted apart from business and infrastructure ones: a busy resource
// is not a failure. Fence rejections are the store's to count (it knows each one without a
// round trip): counting stale-fence decisions here too would count them twice.
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
            break;
        case Verdict::completed:
            if (m) m->job_completed();
            break;
        case Verdict::dead:
            if (m) m->job_dead();
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
               {"cause", to_string(d.cause)},
               {"fence", d.fence ? LogValue(d.fence->value()) : LogValue()},
               {"delay_ms", d.requeues() ? LogValue(d.delay.count()) : LogValue()},
               {"reason", d.reason},
               {"contention_attempts", d.job.contention_attempts},
               {"business_attempts", d.job.business_attempts},
               {"infrastructure_attempts", d.job.infrastructure_attempts}});
}

void QueueMetricsObserver::on_transport_error(std::error_code ec) noexcept {
    if (metrics_) metrics_->redis_error("worker");
    if (log_)
        log_->log(LogLevel::warn, "queue_transport_error", "",
                  {{"error", ec.message()}, {"kind", to_string(classify(ec))}, {"detail", error_detail(ec)}});
}

namespace {
prometheus::Gauge* depth_gauge(prometheus::Family<prometheus::Gauge>& family, const std::string& queue,
                               const char* state) {
    return &family.Add({{"queue", queue}, {"state", state}});
}
}  // namespace

QueueDepthMetrics::QueueDepthMetrics(prometheus::Registry& registry, QueueOptions queue,
                                     std::shared_ptr<PrometheusMetrics> errors, MetricsOptions options)
    : queue_([&] {
          auto q = JobQueue::create(queue);
          if (!q) throw std::invalid_argument("QueueOptions." + q.error().field + ": " + q.error().message);
          return std::move(*q);
      }()),
      errors_(std::move(errors)) {
    auto& family = prometheus::BuildGauge()
                       .Name(options.name_prefix + "queue_jobs")
                       .Help("Jobs of a queue by state (ready, delayed, in_flight, dead), sampled from Redis")
                       .Register(registry);
    const std::string& name = queue_.options().queue;
    ready_ = depth_gauge(family, name, "ready");
    delayed_ = depth_gauge(family, name, "delayed");
    in_flight_ = depth_gauge(family, name, "in_flight");
    dead_ = depth_gauge(family, name, "dead");
}

QueueDepthMetrics::~QueueDepthMetrics() = default;

Result<QueueStats> QueueDepthMetrics::sample() {
    std::lock_guard lock(mutex_);
    auto s = queue_.stats();
    if (!s) {
        if (errors_) errors_->redis_error("worker");
        for (auto* g : {ready_, delayed_, in_flight_, dead_}) g->Set(std::numeric_limits<double>::quiet_NaN());
        return s;
    }
    if (errors_) errors_->redis_answered("worker");
    ready_->Set(static_cast<double>(s->ready));
    delayed_->Set(static_cast<double>(s->delayed));
    in_flight_->Set(static_cast<double>(s->in_flight));
    dead_->Set(static_cast<double>(s->dead));
    return s;
}

}  // namespace fencelock
