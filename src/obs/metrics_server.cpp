// The HTTP side of --metrics-addr: /metrics, /healthz and /readyz on one civetweb server.
// prometheus::Exposer serves only collectables (always 200, no handler of our own), so the
// server is civetweb's CivetServer (the library the Exposer itself runs on) with three handlers.
#include <CivetServer.h>
#include <civetweb.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "fencelock/metrics.hpp"

namespace fencelock {
namespace {

void respond(mg_connection* conn, int status, const char* content_type, const std::string& body) {
    const char* reason = status == 200 ? "OK" : status == 503 ? "Service Unavailable" : "Error";
    mg_printf(conn, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nCache-Control: no-store\r\n\r\n",
              status, reason, content_type, body.size());
    mg_write(conn, body.data(), body.size());
}

// The registry, read after the samplers ran (one scrape at a time).
class SampledRegistry {
public:
    explicit SampledRegistry(std::shared_ptr<prometheus::Registry> registry) : registry_(std::move(registry)) {}
    void add(std::function<void()> sample) {
        std::lock_guard lock(mutex_);
        samplers_.push_back(std::move(sample));
    }
    void sample() {
        std::lock_guard lock(mutex_);
        for (const auto& s : samplers_) s();
    }
    std::vector<prometheus::MetricFamily> collect() {
        sample();
        return registry_->Collect();
    }

private:
    std::shared_ptr<prometheus::Registry> registry_;
    std::mutex mutex_;
    std::vector<std::function<void()>> samplers_;
};

class MetricsHandler final : public CivetHandler {
public:
    explicit MetricsHandler(SampledRegistry& registry) : registry_(registry) {}
    bool handleGet(CivetServer*, mg_connection* conn) override {
        try {
            respond(conn, 200, "text/plain; version=0.0.4; charset=utf-8",
                    prometheus::TextSerializer().Serialize(registry_.collect()));
        } catch (const std::exception& e) {
            respond(conn, 500, "text/plain; charset=utf-8", std::string("cannot collect metrics: ") + e.what() + "\n");
        }
        return true;
    }

private:
    SampledRegistry& registry_;
};

class HealthHandler final : public CivetHandler {
public:
    bool handleGet(CivetServer*, mg_connection* conn) override {
        respond(conn, 200, "text/plain; charset=utf-8", "ok\n");
        return true;
    }
};

class ReadyHandler final : public CivetHandler {
public:
    explicit ReadyHandler(SampledRegistry& registry) : registry_(registry) {}
    void set(std::function<Readiness()> check) {
        std::lock_guard lock(mutex_);
        check_ = std::move(check);
    }
    bool handleGet(CivetServer*, mg_connection* conn) override {
        Readiness r;
        try {
            r = check();
            if (!r.ready) {
                registry_.sample();  // may reach Redis and report a success (QueueDepthMetrics)
                r = check();
            }
        } catch (const std::exception& e) {
            r = Readiness{.ready = false, .reason = std::string("readiness check failed: ") + e.what()};
        }
        if (r.ready) respond(conn, 200, "text/plain; charset=utf-8", "ok\n");
        else respond(conn, 503, "text/plain; charset=utf-8", r.reason + "\n");
        return true;
    }

private:
    Readiness check() {
        std::function<Readiness()> c;
        {
            std::lock_guard lock(mutex_);
            c = check_;
        }
        return c ? c() : Readiness{};
    }

    SampledRegistry& registry_;
    std::mutex mutex_;
    std::function<Readiness()> check_;
};

}  // namespace

struct MetricsServer::Impl {
    explicit Impl(std::shared_ptr<prometheus::Registry> r)
        : registry(std::move(r)), metrics(registry), ready(registry) {}
    // The handlers are declared before the server: it stops (and its threads leave them) first.
    SampledRegistry registry;
    MetricsHandler metrics;
    HealthHandler health;
    ReadyHandler ready;
    std::unique_ptr<CivetServer> server;
};

MetricsServer::MetricsServer(const std::string& address, std::shared_ptr<prometheus::Registry> registry)
    : impl_(std::make_unique<Impl>(std::move(registry))) {
    try {
        // Two threads as prometheus::Exposer had: a slow scrape does not hold up a probe.
        impl_->server =
            std::make_unique<CivetServer>(std::vector<std::string>{"listening_ports", address, "num_threads", "2"});
    } catch (const std::exception& e) {
        throw std::runtime_error("cannot serve metrics on " + address + ": " + e.what());
    }
    impl_->server->addHandler("/metrics", impl_->metrics);
    impl_->server->addHandler("/healthz", impl_->health);
    impl_->server->addHandler("/readyz", impl_->ready);
}

MetricsServer::~MetricsServer() = default;

void MetricsServer::on_scrape(std::function<void()> sample) { impl_->registry.add(std::move(sample)); }

void MetricsServer::ready_when(std::function<Readiness()> check) { impl_->ready.set(std::move(check)); }

unsigned short MetricsServer::port() const {
    auto ports = impl_->server->getListeningPorts();
    return ports.empty() ? 0 : static_cast<unsigned short>(ports.front());
}

}  // namespace fencelock
