#include "observe.hpp"

#include <prometheus/registry.h>

#include <stdexcept>

namespace fencelock::cli {
namespace {

// The store's events to the metrics and the log lines alike.
class StoreObservers final : public StoreObserver {
public:
    StoreObservers(std::shared_ptr<PrometheusMetrics> metrics, std::shared_ptr<JsonLogObserver> log)
        : metrics_(std::move(metrics)), log_(std::move(log)) {}
    void on_fence_rejected(const FenceRejectedEvent& e) noexcept override {
        metrics_->on_fence_rejected(e);
        log_->on_fence_rejected(e);
    }

private:
    std::shared_ptr<PrometheusMetrics> metrics_;
    std::shared_ptr<JsonLogObserver> log_;
};

}  // namespace

void add_observe_flags(CLI::App& command, ObserveArgs& args) {
    command.add_option("--metrics-addr", args.metrics_addr,
                       "serve Prometheus /metrics, /healthz and /readyz (Redis reachable) on HOST:PORT");
    command.add_option("--log-level", args.log_level,
                       "JSON log lines on stderr: debug, info, warn (default), error, off");
    command.add_flag("--log-raw-ids", args.log_raw_ids, "log full resource ids instead of their hash");
}

Observability::Observability(const ObserveArgs& args) {
    const auto level = parse_log_level(args.log_level);
    if (!level) throw InputError{"--log-level", "must be debug, info, warn, error or off"};
    if (!args.metrics_addr.empty() && args.metrics_addr.find(':') == std::string::npos)
        throw InputError{"--metrics-addr", "must be HOST:PORT, e.g. 127.0.0.1:9464"};
    log_ = std::make_shared<JsonLogObserver>(LogOptions{.level = *level, .raw_resource_ids = args.log_raw_ids});
    if (args.metrics_addr.empty()) {
        lock_observer_ = log_;
        store_observer_ = log_;
        return;
    }
    registry_ = std::make_shared<prometheus::Registry>();
    metrics_ = std::make_shared<PrometheusMetrics>(*registry_);
    lock_observer_ = std::make_shared<ObserverChain>(std::vector<std::shared_ptr<LockObserver>>{metrics_, log_});
    store_observer_ = std::make_shared<StoreObservers>(metrics_, log_);
    try {
        server_ = std::make_unique<MetricsServer>(args.metrics_addr, registry_);
    } catch (const std::runtime_error& e) {
        throw InputError{"--metrics-addr", e.what()};
    }
    // /readyz: whether the last Redis round trip this process reported succeeded.
    server_->ready_when([metrics = metrics_] { return metrics->redis_readiness(); });
}

Observability::~Observability() = default;

void Observability::on_scrape(std::function<void()> sample) {
    if (server_) server_->on_scrape(std::move(sample));
}

}  // namespace fencelock::cli
