#pragma once
// Metrics and logs for long-running commands (run, worker): --metrics-addr serves Prometheus
// /metrics, /healthz (liveness) and /readyz (the last Redis round trip succeeded); --log-level
// and --log-raw-ids shape the JSON log lines on stderr.
#include <functional>
#include <memory>
#include <string>

#include "cli.hpp"
#include "fencelock/logging.hpp"
#include "fencelock/metrics.hpp"

namespace prometheus {
class Registry;
}

namespace fencelock::cli {

struct ObserveArgs {
    std::string metrics_addr;  ///< HOST:PORT; empty: no metrics server
    std::string log_level = "warn";
    bool log_raw_ids = false;
};

/// Adds --metrics-addr, --log-level and --log-raw-ids to a command.
void add_observe_flags(CLI::App& command, ObserveArgs& args);

/// What a command attaches to its client (and queue).
class Observability {
public:
    /// Validates the flags (InputError) and starts the metrics server when asked.
    explicit Observability(const ObserveArgs& args);
    ~Observability();

    /// For ClientOptions::observer: metrics (when served) and logs.
    std::shared_ptr<LockObserver> lock_observer() const { return lock_observer_; }
    /// For StoreOptions::observer: the store's fence rejections into the same metrics and logs.
    std::shared_ptr<StoreObserver> store_observer() const { return store_observer_; }
    /// Null when no metrics server runs.
    prometheus::Registry* registry() const { return registry_.get(); }
    /// Runs `sample` before each scrape (nothing when no metrics server runs).
    void on_scrape(std::function<void()> sample);
    /// Null when no metrics server runs.
    std::shared_ptr<PrometheusMetrics> metrics() const { return metrics_; }
    std::shared_ptr<JsonLogObserver> log() const { return log_; }

private:
    std::shared_ptr<prometheus::Registry> registry_;
    std::shared_ptr<PrometheusMetrics> metrics_;
    std::shared_ptr<JsonLogObserver> log_;
    std::shared_ptr<LockObserver> lock_observer_;
    std::shared_ptr<StoreObserver> store_observer_;
    std::unique_ptr<MetricsServer> server_;
};

}  // namespace fencelock::cli
