// Both connection kinds on a topology that follows a master, against two real servers whose
// roles the test swaps: ROLE in the handshake refuses a replica, and a READONLY reply on an
// established connection makes it leave that server and ask the topology again.
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
#include "support/eventually.hpp"

namespace fencelock::test_support {
namespace {

using namespace std::chrono_literals;
using local::RedisServer;

// Names whichever port the test says, like sentinels naming the master.
class FollowingTopology final : public detail::Topology {
public:
    explicit FollowingTopology(std::uint16_t port) : port_(port) {}
    std::expected<detail::ServerAddress, std::error_code> resolve() override {
        ++resolves;
        return detail::ServerAddress{"127.0.0.1", port_.load()};
    }
    void report_failure(const detail::ServerAddress& server, std::error_code ec) noexcept override {
        std::lock_guard lock(m);
        failed.push_back({server, ec});
    }
    bool follows_master() const noexcept override { return true; }
    void point_at(std::uint16_t port) { port_ = port; }

    std::atomic<int> resolves{0};
    std::mutex m;
    std::vector<std::pair<detail::ServerAddress, std::error_code>> failed;

private:
    std::atomic<std::uint16_t> port_;
};

using Factory = std::unique_ptr<detail::Connection> (*)(detail::ConnectionSettings);

class FollowMasterTest : public ::testing::TestWithParam<Factory> {};

TEST_P(FollowMasterTest, ReplicaIsRefusedAndReadonlySendsTheConnectionToTheNewMaster) {
    RedisServer a;
    RedisServer b({"--replicaof", "127.0.0.1", std::to_string(a.port())});
    auto topology = std::make_shared<FollowingTopology>(b.port());
    auto c = GetParam()(
        {.endpoint = *parse_redis_url(a.url()), .connect_timeout = 1s, .command_timeout = 1s, .topology = topology});
    const std::string_view incr[] = {"INCR", "follow:n"};

    // Pointed at the replica: ROLE fails the handshake, nothing runs there.
    auto refused = c->command(incr);
    ASSERT_FALSE(refused.has_value());
    EXPECT_EQ(refused.error(), errc::not_master);
    EXPECT_EQ(classify(refused.error()), failure_kind::retryable);

    // At the master: served.
    topology->point_at(a.port());
    auto one = c->command(incr);
    ASSERT_TRUE(one) << one.error().message();
    EXPECT_EQ(one->integer, 1);
    const int resolves_before = topology->resolves.load();

    // A failover: b becomes the master, a its replica. The connection on a is still up; its
    // next write is refused READONLY (retryable), and it leaves a.
    ASSERT_EQ(b.cli({"REPLICAOF", "NO", "ONE"}), "OK");
    ASSERT_EQ(a.cli({"REPLICAOF", "127.0.0.1", std::to_string(b.port())}), "OK");
    topology->point_at(b.port());
    auto readonly = c->command(incr);
    ASSERT_TRUE(readonly.has_value()) << readonly.error().message();
    ASSERT_EQ(readonly->kind, detail::Reply::Kind::error) << "served by " << a.port();
    EXPECT_TRUE(readonly->str.starts_with("READONLY")) << readonly->str;

    // The retry reaches the new master through a fresh resolve().
    auto moved = c->command(incr);
    ASSERT_TRUE(moved) << moved.error().message();
    EXPECT_EQ(moved->kind, detail::Reply::Kind::integer);
    EXPECT_GT(topology->resolves.load(), resolves_before);
    EXPECT_EQ(b.cli({"GET", "follow:n"}), std::to_string(moved->integer));
    std::lock_guard lock(topology->m);
    ASSERT_FALSE(topology->failed.empty());
    EXPECT_EQ(topology->failed.back().first.port, a.port());
    EXPECT_EQ(topology->failed.back().second, errc::not_master);
}

INSTANTIATE_TEST_SUITE_P(BothConnectionKinds, FollowMasterTest,
                         ::testing::Values(&detail::make_hiredis_connection, &detail::make_multiplexed_connection),
                         [](const auto& info) { return info.index == 0 ? "Blocking" : "Multiplexed"; });

}  // namespace
}  // namespace fencelock::test_support
