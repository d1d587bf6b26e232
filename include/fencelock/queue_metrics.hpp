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
///  - `fence_rejected_total` when the store refused the job's fence (cause stale_fence);
///  - `job_duplicate_total` when the job's idempotency key had already completed.
/// Each decision is also logged as `job_decision` (warn for failures, info otherwise), and a
/// transport error as `queue_transport_error` (warn).

#include <memory>
#include <system_error>

#include "fencelock/logging.hpp"
#include "fencelock/metrics.hpp"
#include "fencelock/queue_observer.hpp"

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

}  // namespace fencelock
