#pragma once
/// Prometheus metrics for fencelock (library fencelock::obs). Attach a PrometheusMetrics as
/// ClientOptions::observer to count lock events and as StoreOptions::observer to count the
/// fences the store refuses; the queue reports its events through QueueMetricsObserver (which
/// calls the methods below). Names follow Prometheus conventions under a configurable prefix
/// (default `fencelock_`): `_total` counters and `_seconds` histograms. Every family whose
/// labels are known in advance is exported at zero from the start, so dashboards and alerts
/// see zeros instead of missing series.
///
/// Redis errors (`redis_errors_total{source}`) count every failed Redis call: each failed
/// acquire attempt, renewal and release of the client (`client`), each failed renewal of the
/// keeper (`keeper`), and each failed call of the queue worker's transport (`worker`).
///
/// The job families (`job_*_total`, `redis_errors_total{source="worker"}`) exist only in a
/// process that runs jobs: export_job_metrics() registers them, which QueueMetricsObserver
/// does when it is created (and the job counters do on first use). A lock-only process
/// (`fencelock run`) exports none.
///
/// Every observed Redis round trip also sets readiness (redis_readiness()): a failed one
/// (an acquisition, renewal or release that ended in a Redis error, a failed call of the
/// queue transport or depth sample) makes the process not ready, the next one that Redis
/// answered makes it ready again (docs/RUNBOOK.md, "Health and readiness").
///
/// Labels stay bounded: a resource appears only as its *type*, the part of its name before the
/// first separator (`order:42` -> `order`), never as the full id. Names without the separator
/// count as `untyped`.

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "fencelock/observer.hpp"
#include "fencelock/store_observer.hpp"

namespace prometheus {
class Registry;
}

namespace fencelock {

struct MetricsOptions {
    /// Prepended to every metric name. Default "fencelock_".
    std::string name_prefix = "fencelock_";
    /// resource_type is the part of a resource name before this character. Default ':'.
    char resource_type_separator = ':';
    /// Resource types whose contention series are exported at zero from the start (types seen
    /// later appear when first contended). Default none.
    std::vector<std::string> resource_types{};
};

/// What a readiness probe answers: ready, or not and why (a short text, e.g. "redis
/// unavailable (keeper): Connection refused").
struct Readiness {
    bool ready = true;
    std::string reason{};
};

namespace detail {
class RedisHealth;
}

class PrometheusMetrics final : public LockObserver, public StoreObserver {
public:
    /// Registers every family in `registry` (which must outlive this object).
    explicit PrometheusMetrics(prometheus::Registry& registry, MetricsOptions options = {});
    ~PrometheusMetrics() override;

    void on_acquire(const AcquireEvent& e) noexcept override;
    void on_renew(const RenewEvent& e) noexcept override;
    void on_release(const ReleaseEvent& e) noexcept override;
    void on_lease_lost(const LossEvent& e) noexcept override;
    /// Counts `fence_rejected_total`.
    void on_fence_rejected(const FenceRejectedEvent& e) noexcept override;

    /// A store refused a write, claim or transaction as stale (what on_fence_rejected counts).
    void fence_rejected(std::string_view resource) noexcept;
    /// A Redis call failed. `source`: "client", "keeper" (both counted from lock events
    /// already) or "worker" (the queue transport, from QueueMetricsObserver).
    void redis_error(std::string_view source) noexcept;
    /// A Redis call of `source` succeeded where no lock event says so (a queue depth sample):
    /// readiness only, nothing is counted.
    void redis_answered(std::string_view source) noexcept;
    /// Ready while the last Redis round trip observed succeeded (or none failed yet).
    Readiness redis_readiness() const;

    /// Registers the job families at zero (idempotent, thread-safe). Throws what
    /// prometheus-cpp throws for a clashing name.
    void export_job_metrics();
    /// A job completed (its effect recorded under its own fence) and was acknowledged.
    void job_completed() noexcept;
    /// A job was dead-lettered.
    void job_dead() noexcept;
    /// A job goes back to the queue: reason is "contention", "business" or "infrastructure".
    void job_retry(std::string_view reason) noexcept;
    /// A job was put back with a delay (any reason).
    void job_requeued() noexcept;
    /// A job's execution was abandoned (e.g. "lease_lost", "shutdown").
    void job_aborted(std::string_view reason) noexcept;
    /// A job whose idempotency key was already completed (redelivery or second enqueue).
    void job_duplicate() noexcept;

    /// The bounded label for a resource name.
    std::string resource_type(std::string_view resource) const;

private:
    struct Families;
    struct JobFamilies;
    JobFamilies* jobs() noexcept;
    /// Counts a failed Redis call of `source` and makes the process not ready.
    void redis_failed(std::string_view source, std::error_code error) noexcept;

    prometheus::Registry& registry_;
    std::unique_ptr<Families> f_;
    MetricsOptions options_;
    std::once_flag jobs_once_;
    std::unique_ptr<JobFamilies> jobs_;
    std::unique_ptr<detail::RedisHealth> health_;
};

/// Serves, from background threads until destroyed, on `address` (HOST:PORT):
///  - GET /metrics: `registry` in the Prometheus text format;
///  - GET /healthz: liveness, 200 "ok" while the process runs;
///  - GET /readyz: readiness, 200 "ok", or 503 and the reason when the check set with
///    ready_when() says not ready (always 200 without one).
/// Throws std::runtime_error if the address cannot be bound.
class MetricsServer {
public:
    MetricsServer(const std::string& address, std::shared_ptr<prometheus::Registry> registry);
    ~MetricsServer();
    MetricsServer(const MetricsServer&) = delete;
    MetricsServer& operator=(const MetricsServer&) = delete;
    /// The port actually bound (useful with port 0).
    unsigned short port() const;
    /// Runs `sample` before every scrape is answered (from the server's thread, one scrape at
    /// a time), so gauges that cost a round trip (QueueDepthMetrics) are read only when asked.
    void on_scrape(std::function<void()> sample);
    /// What /readyz answers. When `check` says not ready, the scrape samplers run once and
    /// `check` is asked again: a sampler that reaches Redis (QueueDepthMetrics) lets an idle
    /// worker whose Redis came back turn ready without waiting for a job.
    void ready_when(std::function<Readiness()> check);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace fencelock
