#pragma once
/// Prometheus metrics for fencelock (library fencelock::obs). Attach a PrometheusMetrics as
/// ClientOptions::observer to count lock events; the store and queue layers report their own
/// events through the methods below. Names follow Prometheus conventions under a configurable
/// prefix (default `fencelock_`): `_total` counters and `_seconds` histograms.
///
/// Labels stay bounded: a resource appears only as its *type*, the part of its name before the
/// first separator (`order:42` -> `order`), never as the full id. Names without the separator
/// count as `untyped`.

#include <memory>
#include <string>
#include <string_view>

#include "fencelock/observer.hpp"

namespace prometheus {
class Registry;
}

namespace fencelock {

struct MetricsOptions {
    /// Prepended to every metric name. Default "fencelock_".
    std::string name_prefix = "fencelock_";
    /// resource_type is the part of a resource name before this character. Default ':'.
    char resource_type_separator = ':';
};

class PrometheusMetrics final : public LockObserver {
public:
    /// Registers every family in `registry` (which must outlive this object).
    explicit PrometheusMetrics(prometheus::Registry& registry, MetricsOptions options = {});
    ~PrometheusMetrics() override;

    void on_acquire(const AcquireEvent& e) noexcept override;
    void on_renew(const RenewEvent& e) noexcept override;
    void on_release(const ReleaseEvent& e) noexcept override;
    void on_lease_lost(const LossEvent& e) noexcept override;

    /// A store refused a write, claim or transaction as stale.
    void fence_rejected(std::string_view resource) noexcept;
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

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace fencelock
