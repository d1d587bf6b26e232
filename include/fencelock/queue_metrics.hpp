#pragma once
/// Queue job events into the same Prometheus metrics and JSON log lines as lock events
/// (library fencelock::obs, built with the queue runtime). Attach one as
/// `WorkerOptions::processing.observer`, with the PrometheusMetrics and JsonLogObserver given
/// to the LockClient, and the worker's jobs show up next to its leases:
///
///     auto metrics = std::make_shared<PrometheusMetrics>(*registry);
///     auto log = std::make_shared<JsonLogObserver>();
///     options.processing.observer = std::make_shared<QueueMetricsObserver>(metrics, log);
///
/// What each decision counts (names under MetricsOptions::name_prefix, default `fencelock_`):
///  - `job_retry_total{reason}` and `job_requeue_total`: every requeue, with reason
///    `contention` (the resource is busy: not a failure), `business` (the handler failed) or
///    `infrastructure` (Redis or the store failed, "retry later", a lost lease);
///  - `job_aborted_total{reason="lease_lost"}` for a lost lease or a stale fence, and
///    `{reason="shutdown"}` for a cancelled attempt;
///  - `job_completed_total`, `job_dead_total` and `job_duplicate_total` (the job's idempotency
///    key had been completed by an earlier execution);
///  - `redis_errors_total{source="worker"}` for each failed call of the queue transport.
/// Fence rejections are counted by the store (`fence_rejected_total`): give the same
/// PrometheusMetrics to StoreOptions::observer. Each decision is also logged as `job_decision`
/// (warn for failures, info otherwise), and a transport error as `queue_transport_error` (warn).
///
/// Queue depth is a property of the queue, not of one worker's decisions: QueueDepthMetrics
/// samples it from Redis on a period or on scrape, never per job.

#include <memory>
#include <mutex>
#include <system_error>

#include "fencelock/logging.hpp"
#include "fencelock/metrics.hpp"
#include "fencelock/queue.hpp"
#include "fencelock/queue_observer.hpp"

namespace prometheus {
class Gauge;
class Registry;
}  // namespace prometheus

namespace fencelock {

class QueueMetricsObserver final : public QueueObserver {
public:
    /// Either may be null: then nothing is counted, or nothing is logged.
    QueueMetricsObserver(std::shared_ptr<PrometheusMetrics> metrics, std::shared_ptr<JsonLogObserver> log);

    /// Counts the decision by its verdict and cause, and logs it.
    void on_decision(const Decision& d) noexcept override;
    /// Logs the error.
    void on_transport_error(std::error_code ec) noexcept override;

private:
    std::shared_ptr<PrometheusMetrics> metrics_;
    std::shared_ptr<JsonLogObserver> log_;
};

/// The depth of one queue as gauges `queue_jobs{queue, state}`, state `ready`, `delayed`,
/// `in_flight` and `dead` (the dead-letter stream), set by sample() from one Redis round trip
/// (the queue's stats script). Call sample() on a period, or on every scrape:
///
///     auto depth = std::make_shared<QueueDepthMetrics>(*registry, queue_options, metrics);
///     server.on_scrape([depth] { (void)depth->sample(); });
class QueueDepthMetrics {
public:
    /// Registers the gauges in `registry` (which must outlive this object); connects on the
    /// first sample. `errors` (may be null) counts a failed sample as a worker Redis error.
    /// Throws std::invalid_argument for invalid queue options.
    QueueDepthMetrics(prometheus::Registry& registry, QueueOptions queue,
                      std::shared_ptr<PrometheusMetrics> errors = {}, MetricsOptions options = {});
    ~QueueDepthMetrics();
    QueueDepthMetrics(const QueueDepthMetrics&) = delete;
    QueueDepthMetrics& operator=(const QueueDepthMetrics&) = delete;

    /// Reads the queue's sizes and sets the gauges. On failure the gauges read NaN (unknown:
    /// a stale depth would look like a healthy one) and the error is returned. Thread-safe.
    Result<QueueStats> sample();

private:
    std::mutex mutex_;
    JobQueue queue_;
    std::shared_ptr<PrometheusMetrics> errors_;
    prometheus::Gauge* ready_;
    prometheus::Gauge* delayed_;
    prometheus::Gauge* in_flight_;
    prometheus::Gauge* dead_;
};

}  // namespace fencelock
