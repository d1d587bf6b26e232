#include "redis/topology.hpp"

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
    return std::make_shared<SingleServer>(ServerAddress{endpoint.host, endpoint.port});
}

}  // namespace fencelock::detail
