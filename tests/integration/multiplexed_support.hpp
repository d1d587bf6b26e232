#pragma once
// What the multiplexed connection's integration tests share: one command with its arguments as
// strings, the connection's counters, and a fixture with a throwaway redis-server.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <expected>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include "fencelock/redis_url.hpp"
#include "local_servers/redis_server.hpp"
#include "redis/connection.hpp"
#include "redis/multiplexed_connection.hpp"
#include "support/eventually.hpp"

namespace fencelock::test_support {

using MultiplexedResult = std::expected<detail::Reply, std::error_code>;

inline MultiplexedResult send(detail::Connection& c, const std::vector<std::string>& argv) {
    const std::vector<std::string_view> views(argv.begin(), argv.end());
    return c.command(views);
}

/// The counters of a connection make_multiplexed_connection() made.
inline detail::MultiplexedStats stats(const detail::Connection& c) { return *detail::multiplexed_stats(c); }

using namespace std::chrono_literals;

/// A throwaway redis-server per test and the connection's helpers.
class MultiplexedFixture : public ::testing::Test {
protected:
    void SetUp() override { redis = std::make_unique<local::RedisServer>(); }

    using Result = MultiplexedResult;

    // Generous timeouts by default: a test that wants a timeout asks for a short one.
    std::unique_ptr<detail::Connection> connect(std::chrono::milliseconds command_timeout = 30s,
                                                std::chrono::milliseconds connect_timeout = 30s) {
        return detail::make_multiplexed_connection({.endpoint = *parse_redis_url(redis->url()),
                                                    .connect_timeout = connect_timeout,
                                                    .command_timeout = command_timeout});
    }

    // Sends BLPOP on a key nobody pushes to: the connection has one round trip in flight until
    // release_blocker() pushes. Returns once the command is written.
    std::jthread block(detail::Connection& c, Result& out) {
        const auto before = stats(c).writes;
        std::jthread t([&c, &out] { out = send(c, {"BLPOP", "gate", "0"}); });
        EXPECT_TRUE(eventually([&] { return stats(c).writes > before; }));
        // Written is not yet in flight: a first write may be the handshake. Blocked in Redis is.
        EXPECT_TRUE(eventually([&] {
            return redis->cli({"INFO", "clients"}).find("blocked_clients:1") != std::string::npos;
        }));
        return t;
    }
    void release_blocker() { redis->cli({"LPUSH", "gate", "open"}); }

    // Connected, and the loop has found the connection idle: the next caller goes direct.
    std::unique_ptr<detail::Connection> idle_connection(std::chrono::milliseconds command_timeout = 30s) {
        auto c = connect(command_timeout);
        EXPECT_TRUE(send(*c, {"PING"}));  // the first command connects, through the loop
        EXPECT_TRUE(eventually([&] { return stats(*c).parked; }));
        return c;
    }

    // Starts `n` callers sending `argv_of(i)`; returns once all n requests are queued.
    std::vector<std::jthread> callers(detail::Connection& c, std::size_t n, std::vector<Result>& out,
                                      std::function<std::vector<std::string>(std::size_t)> argv_of) {
        out.assign(n, std::unexpected(std::error_code()));
        const auto before = stats(c).requests;
        std::vector<std::jthread> threads;
        for (std::size_t i = 0; i < n; ++i)
            threads.emplace_back([&c, &out, argv_of, i] { out[i] = send(c, argv_of(i)); });
        EXPECT_TRUE(eventually([&] { return stats(c).requests == before + n; }));
        return threads;
    }

    // While BLPOP waits in Redis, 31 callers queue; once it is answered, their commands leave
    // in one write and each caller gets its own reply.
    void expect_queued_callers_leave_in_one_write(detail::Connection& c) {
        const auto commands = stats(c).commands;
        Result blocked;
        std::vector<Result> out;
        std::uint64_t writes = 0;
        {
            auto blocker = block(c, blocked);
            writes = stats(c).writes;
            auto others = callers(c, 31, out, [](std::size_t i) {
                return std::vector<std::string>{"INCRBY", "n:" + std::to_string(i), std::to_string(i + 1)};
            });
            EXPECT_EQ(stats(c).writes, writes) << "nothing else may be written while BLPOP is in flight";
            release_blocker();
        }
        ASSERT_TRUE(blocked) << blocked.error().message();
        EXPECT_EQ(blocked->elements.at(1).str, "open");
        for (std::size_t i = 0; i < out.size(); ++i) {
            ASSERT_TRUE(out[i]) << out[i].error().message();
            EXPECT_EQ(out[i]->integer, static_cast<std::int64_t>(i + 1));
        }
        EXPECT_EQ(stats(c).commands, commands + 32);
        EXPECT_EQ(stats(c).writes, writes + 1) << "the 31 queued commands must leave in one write";
    }

    std::unique_ptr<local::RedisServer> redis;
};

}  // namespace fencelock::test_support
