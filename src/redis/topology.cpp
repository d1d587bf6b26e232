#include "redis/topology.hpp"

#include "redis/sentinel_topology.hpp"

namespace fencelock::detail {
namespace {

class SingleServer final : public Topology {
public:
    explicit SingleServer(ServerAddress server) : server_(std::move(server)) {}
    std::expected<ServerAddress, std::error_code> resolve() override { return server_; }
    // One server: nothing to switch to; the connection retries it (and fails closed meanwhile).
    void report_failure(const ServerAddress&, std::error_code) noexcept override {}

private:
    const ServerAddress server_;
};

}  // namespace

std::shared_ptr<Topology> single_server(const RedisEndpoint& endpoint) {
    // A Unix socket is the address whose host is its path and whose port is 0.
    if (endpoint.uses_unix()) return std::make_shared<SingleServer>(ServerAddress{endpoint.unix_path, 0});
    return std::make_shared<SingleServer>(ServerAddress{endpoint.host, endpoint.port});
}

std::shared_ptr<Topology> topology_for(const RedisEndpoint& endpoint) {
    return endpoint.uses_sentinel() ? sentinel_topology(endpoint) : single_server(endpoint);
}

}  // namespace fencelock::detail
