// The fault proxy itself, against a real redis-server: it forwards, delays, holds, drops,
// cuts and refuses exactly when told, and leaves no descriptor behind.
#include <dirent.h>

#include <gtest/gtest.h>

#include <memory>

#include "faults/fault_proxy.hpp"
#include "local_servers/redis_server.hpp"
#include "support/eventually.hpp"
#include "support/raw_redis.hpp"

namespace fencelock::faults {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using fencelock::local::RedisServer;
using fencelock::test_support::eventually;
using fencelock::test_support::RawRedis;

std::size_t open_fds() {
    std::size_t n = 0;
    if (DIR* d = ::opendir("/proc/self/fd")) {
        while (::readdir(d) != nullptr) ++n;
        ::closedir(d);
    }
    return n;
}

class ProxyTest : public ::testing::Test {
protected:
    void SetUp() override {
        redis = std::make_unique<RedisServer>();
        proxy = std::make_unique<FaultProxy>(redis->port());
    }
    std::unique_ptr<RedisServer> redis;
    std::unique_ptr<FaultProxy> proxy;
};

TEST_F(ProxyTest, ForwardsBothWaysAndCounts) {
    EXPECT_EQ(local::run_command({"redis-cli", "-p", std::to_string(proxy->port()), "PING"}), 0);
    RawRedis conn(proxy->port());
    conn.send({"PING"});
    EXPECT_EQ(conn.read_line(2s), "+PONG");
    conn.send({"SET", "k", "v"});
    EXPECT_EQ(conn.read_line(2s), "+OK");
    EXPECT_EQ(redis->cli({"GET", "k"}), "v");
    const auto c = proxy->counters();
    EXPECT_GE(c.accepted, 2u);
    EXPECT_GT(c.bytes_up, 0u);
    EXPECT_GT(c.bytes_down, 0u);
    EXPECT_TRUE(eventually([&] { return proxy->counters().open == 1; })) << "redis-cli's connection was not closed";
}

TEST_F(ProxyTest, DroppedReplyTimesOutButTheCommandRan) {
    RawRedis conn(proxy->port());
    proxy->drop_replies();
    conn.send({"INCR", "counter"});
    EXPECT_FALSE(conn.read_line(300ms)) << "a dropped reply arrived";
    EXPECT_EQ(redis->cli({"GET", "counter"}), "1") << "the request must reach Redis";
    EXPECT_GT(proxy->counters().dropped_down, 0u);
    proxy->pass();
    conn.send({"INCR", "counter"});
    EXPECT_EQ(conn.read_line(2s), ":2");
}

TEST_F(ProxyTest, DropNextRepliesLosesExactlyOneReply) {
    RawRedis conn(proxy->port());
    proxy->drop_next_replies(1);
    conn.send({"INCR", "n"});
    EXPECT_FALSE(conn.read_line(200ms));
    conn.send({"INCR", "n"});
    EXPECT_EQ(conn.read_line(2s), ":2");
}

TEST_F(ProxyTest, DelayedReplyArrivesLate) {
    RawRedis conn(proxy->port());
    proxy->delay_replies(150ms);
    const auto t0 = Clock::now();
    conn.send({"PING"});
    EXPECT_EQ(conn.read_line(2s), "+PONG");
    EXPECT_GE(Clock::now() - t0, 150ms);
}

TEST_F(ProxyTest, HeldReplyArrivesOnRelease) {
    RawRedis conn(proxy->port());
    proxy->hold_replies();
    conn.send({"INCR", "h"});
    ASSERT_TRUE(eventually([&] { return proxy->counters().held_down > 0; })) << "the reply never reached the proxy";
    EXPECT_EQ(redis->cli({"GET", "h"}), "1");
    EXPECT_FALSE(conn.read_line(100ms));
    proxy->release();
    EXPECT_EQ(conn.read_line(2s), ":1");
    EXPECT_EQ(proxy->counters().held_down, 0u);
}

TEST_F(ProxyTest, HeldRequestRunsOnlyOnRelease) {
    RawRedis conn(proxy->port());
    proxy->hold_requests();
    conn.send({"INCR", "r"});
    ASSERT_TRUE(eventually([&] { return proxy->counters().held_up > 0; }));
    EXPECT_EQ(redis->cli({"GET", "r"}), "") << "a held request reached Redis";
    proxy->release();
    EXPECT_EQ(conn.read_line(2s), ":1");
    EXPECT_EQ(redis->cli({"GET", "r"}), "1");
}

TEST_F(ProxyTest, HeldRequestOfADepartedClientStillArrives) {
    {
        RawRedis conn(proxy->port());
        proxy->hold_requests();
        conn.send({"INCR", "late"});
        ASSERT_TRUE(eventually([&] { return proxy->counters().held_up > 0; }));
    }
    proxy->release();
    EXPECT_TRUE(eventually([&] { return redis->cli({"GET", "late"}) == "1"; }));
    EXPECT_TRUE(eventually([&] { return proxy->counters().open == 0; }));
}

TEST_F(ProxyTest, CutBreaksOpenConnections) {
    RawRedis conn(proxy->port());
    conn.send({"PING"});
    ASSERT_EQ(conn.read_line(2s), "+PONG");
    proxy->cut();
    EXPECT_TRUE(conn.closed_within(2s));
    EXPECT_EQ(proxy->counters().open, 0u);
    EXPECT_EQ(proxy->counters().cut, 1u);
    RawRedis again(proxy->port());  // new connections still work
    again.send({"PING"});
    EXPECT_EQ(again.read_line(2s), "+PONG");
}

TEST_F(ProxyTest, RefuseRejectsNewConnectionsUntilLifted) {
    proxy->refuse(true);
    EXPECT_THROW(RawRedis(proxy->port()), std::system_error);
    proxy->refuse(false);
    RawRedis conn(proxy->port());
    conn.send({"PING"});
    EXPECT_EQ(conn.read_line(2s), "+PONG");
}

TEST_F(ProxyTest, DownstreamServerGoneClosesTheClient) {
    RawRedis conn(proxy->port());
    conn.send({"PING"});
    ASSERT_EQ(conn.read_line(2s), "+PONG");
    redis->kill();
    EXPECT_TRUE(conn.closed_within(2s));
    RawRedis refused(proxy->port());  // accepted, then closed: nothing to forward to
    EXPECT_TRUE(refused.closed_within(2s));
    redis->start();
}

TEST_F(ProxyTest, DestructorLeavesNoDescriptors) {
    proxy.reset();
    const std::size_t before = open_fds();
    {
        FaultProxy p(redis->port());
        RawRedis a(p.port()), b(p.port());
        p.hold_replies();
        a.send({"PING"});
        ASSERT_TRUE(eventually([&] { return p.counters().held_down > 0; }));
    }
    EXPECT_EQ(open_fds(), before);
}

}  // namespace
}  // namespace fencelock::faults
