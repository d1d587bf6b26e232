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
/// Labels stay bounded: a resource appears only as its *type*, the part of its name before the
/// first separator (`order:42` -> `order`), never as the full id. Names without the separator
/// count as `untyped`.

#include <functional>
#include <memory>
#include <system_error>
#include <vector>
#include <string>
#include <string_view>

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
    std::unique_ptr<Families> f_;
    MetricsOptions options_;
};

/// Serves GET /metrics for `registry` on `address` (HOST:PORT) from a background thread until
/// destroyed. Throws std::runtime_error if the address cannot be bound.
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

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace fencelock
