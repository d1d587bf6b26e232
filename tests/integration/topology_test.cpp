// The topology seam: every kind of connection reaches the server its Topology names (not the
// endpoint's host and port) and reports the server that failed it, so Sentinel and Cluster can
// plug in without touching the lock logic.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <vector>

#include "fencelock/error.hpp"
#include "fencelock/redis_url.hpp"
#include "local_servers/redis_server.hpp"
#include "redis/hiredis_connection.hpp"
#include "redis/multiplexed_connection.hpp"
#include "redis/topology.hpp"

namespace fencelock::test_support {
namespace {

using namespace std::chrono_literals;
using local::RedisServer;

class ScriptedTopology final : public detail::Topology {
public:
    explicit ScriptedTopology(std::uint16_t port) : port_(port) {}
    std::expected<detail::ServerAddress, std::error_code> resolve() override {
        ++resolves;
        return detail::ServerAddress{"127.0.0.1", port_.load()};
    }
    void report_failure(const detail::ServerAddress& server, std::error_code) noexcept override {
        std::lock_guard lock(m);
        failed.push_back(server);
    }
    void point_at(std::uint16_t port) { port_ = port; }

    std::atomic<int> resolves{0};
    std::mutex m;
    std::vector<detail::ServerAddress> failed;

private:
    std::atomic<std::uint16_t> port_;
};

using Factory = std::unique_ptr<detail::Connection> (*)(detail::ConnectionSettings);

class TopologyTest : public ::testing::TestWithParam<Factory> {};

TEST_P(TopologyTest, ConnectionsGoWhereTheTopologySaysAndReportWhatFailedThem) {
    RedisServer redis;
    const std::uint16_t nobody = local::free_port();
    // The endpoint names a port nobody listens on: only the topology can lead to the server.
    RedisEndpoint endpoint = *parse_redis_url("redis://127.0.0.1:" + std::to_string(nobody));
    auto topology = std::make_shared<ScriptedTopology>(redis.port());
    auto c = GetParam()({.endpoint = endpoint, .connect_timeout = 1s, .command_timeout = 1s, .topology = topology});
    const std::string_view ping[] = {"PING"};
    auto pong = c->command(ping);
    ASSERT_TRUE(pong) << pong.error().message();
    EXPECT_EQ(pong->str, "PONG");
    EXPECT_EQ(topology->resolves.load(), 1);

    // The server goes away: the failure is reported against the address the topology named,
    // and the next connection asks the topology again.
    redis.kill();
    topology->point_at(nobody);
    auto down = c->command(ping);
    ASSERT_FALSE(down.has_value());
    auto refused = c->command(ping);
    ASSERT_FALSE(refused.has_value());
    EXPECT_EQ(refused.error(), errc::unavailable);
    EXPECT_GE(topology->resolves.load(), 2);
    std::lock_guard lock(topology->m);
    ASSERT_FALSE(topology->failed.empty());
    EXPECT_EQ(topology->failed.back(), (detail::ServerAddress{"127.0.0.1", nobody}));
}

INSTANTIATE_TEST_SUITE_P(BothKinds, TopologyTest,
                         ::testing::Values(&detail::make_hiredis_connection, &detail::make_multiplexed_connection),
                         [](const ::testing::TestParamInfo<Factory>& info) {
                             return std::string(info.param == &detail::make_hiredis_connection ? "blocking"
                                                                                               : "multiplexed");
                         });

}  // namespace
}  // namespace fencelock::test_support
