// The multiplexed connection against a real redis-server: many threads on one socket, every
// reply to its own caller, batching, and failing closed when Redis dies, stops or refuses us.
#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "fencelock/error.hpp"
#include "fencelock/redis_url.hpp"
#include "local_servers/redis_server.hpp"
#include "multiplexed_support.hpp"
#include "redis/multiplexed_connection.hpp"
#include "support/eventually.hpp"

namespace fencelock::test_support {
namespace {

using detail::Connection;
using detail::Reply;
using Result = MultiplexedResult;
using local::free_port;
using local::RedisServer;

class MultiplexedTest : public MultiplexedFixture {};

TEST_F(MultiplexedTest, CommandsAndErrorReplies) {
    auto c = connect();
    auto set = send(*c, {"SET", "k", "v"});
    ASSERT_TRUE(set) << set.error().message();
    EXPECT_EQ(set->kind, Reply::Kind::status);
    EXPECT_EQ(set->str, "OK");
    EXPECT_EQ(send(*c, {"GET", "k"})->str, "v");
    EXPECT_EQ(send(*c, {"GET", "missing"})->kind, Reply::Kind::nil);
    auto wrong = send(*c, {"INCR", "k"});
    ASSERT_TRUE(wrong) << "an error reply is a reply, not a transport failure";
    EXPECT_EQ(wrong->kind, Reply::Kind::error);
    EXPECT_NE(wrong->str.find("not an integer"), std::string::npos);
    auto list = send(*c, {"MGET", "k", "missing"});
    ASSERT_EQ(list->kind, Reply::Kind::array);
    EXPECT_EQ(list->elements.at(0).str, "v");
    EXPECT_EQ(list->elements.at(1).kind, Reply::Kind::nil);
    EXPECT_EQ(stats(*c).connects, 1u);
}

TEST_F(MultiplexedTest, ThirtyTwoThreadsShareOneSocketAndEachGetsItsOwnReplies) {
    auto c = connect();
    constexpr int threads = 32, rounds = 200;
    std::barrier start(threads);
    std::atomic<int> mismatches{0};
    {
        std::vector<std::jthread> workers;
        for (int t = 0; t < threads; ++t)
            workers.emplace_back([&, t] {
                const std::string key = "counter:" + std::to_string(t);
                start.arrive_and_wait();
                for (int i = 1; i <= rounds; ++i) {
                    auto incr = send(*c, {"INCR", key});
                    auto get = send(*c, {"GET", key});
                    if (!incr || incr->integer != i || !get || get->str != std::to_string(i)) ++mismatches;
                }
            });
    }
    EXPECT_EQ(mismatches.load(), 0);
    const auto s = stats(*c);
    EXPECT_EQ(s.connects, 1u);
    EXPECT_EQ(s.commands, 2u * threads * rounds);
    EXPECT_EQ(redis->cli({"GET", "counter:31"}), std::to_string(rounds));
}

TEST_F(MultiplexedTest, CommandsIssuedDuringARoundTripLeaveTogetherInOneWrite) {
    auto c = connect();  // BLPOP is the first command: it goes through the loop, which connects
    expect_queued_callers_leave_in_one_write(*c);
    EXPECT_EQ(stats(*c).borrowed, 0u);
}

TEST_F(MultiplexedTest, PipelineIsContiguousAndInOrderWhileOthersSend) {
    auto c = connect();
    std::atomic<bool> stop{false};
    std::vector<std::jthread> noise;
    for (int t = 0; t < 8; ++t)
        noise.emplace_back([&] {
            while (!stop) EXPECT_TRUE(send(*c, {"INCR", "shared"}));
        });
    // Other threads INCR the same key: the pipeline's replies are consecutive only if no other
    // command ran between its commands.
    const std::vector<std::vector<std::string_view>> batch(10, {"INCR", "shared"});
    for (int round = 0; round < 200; ++round) {
        auto replies = c->pipeline(batch);
        ASSERT_TRUE(replies) << replies.error().message();
        ASSERT_EQ(replies->size(), batch.size());
        for (std::size_t i = 1; i < replies->size(); ++i)
            ASSERT_EQ((*replies)[i].integer, (*replies)[0].integer + static_cast<std::int64_t>(i));
    }
    stop = true;
}

TEST_F(MultiplexedTest, CommandsThatWouldChangeTheSharedConnectionAreRefused) {
    auto c = connect();
    for (auto argv : std::vector<std::vector<std::string>>{{"SELECT", "1"},
                                                           {"auth", "pw"},
                                                           {"SUBSCRIBE", "ch"},
                                                           {"MONITOR"},
                                                           {"CLIENT", "REPLY", "OFF"},
                                                           {"WATCH", "k"},
                                                           {"MULTI"},
                                                           {"RESET"},
                                                           {}}) {
        auto r = send(*c, argv);
        ASSERT_FALSE(r.has_value());
        EXPECT_EQ(r.error(), errc::protocol_error);
    }
    const std::vector<std::vector<std::string_view>> open{{"MULTI"}, {"INCR", "k"}};
    EXPECT_EQ(c->pipeline(open).error(), errc::protocol_error);
    EXPECT_EQ(stats(*c).requests, 0u) << "nothing was sent";

    const std::vector<std::vector<std::string_view>> transaction{{"MULTI"}, {"INCR", "k"}, {"EXEC"}};
    auto done = c->pipeline(transaction);
    ASSERT_TRUE(done) << done.error().message();
    EXPECT_EQ(done->at(2).elements.at(0).integer, 1);
    EXPECT_TRUE(c->pipeline({})->empty());
}

TEST_F(MultiplexedTest, KilledServerFailsCallersClosedAndTheConnectionRecovers) {
    auto c = connect(30s, 1s);
    ASSERT_TRUE(send(*c, {"SET", "k", "before"}));
    Result blocked;
    std::vector<Result> out;
    {
        auto blocker = block(*c, blocked);
        auto others = callers(*c, 8, out, [](std::size_t) { return std::vector<std::string>{"GET", "k"}; });
        redis->kill();
    }
    ASSERT_FALSE(blocked.has_value());
    EXPECT_EQ(blocked.error(), errc::connection_lost) << "written: the outcome is unknown";
    for (const auto& r : out) {
        ASSERT_FALSE(r.has_value()) << "no reply may reach a caller once the server is gone";
        EXPECT_EQ(r.error(), errc::unavailable) << "queued behind BLPOP: never written";
    }
    auto down = send(*c, {"GET", "k"});
    ASSERT_FALSE(down.has_value());
    EXPECT_EQ(down.error(), errc::unavailable);

    redis->start();  // empty dataset
    auto after = send(*c, {"GET", "k"});
    ASSERT_TRUE(after) << after.error().message();
    EXPECT_EQ(after->kind, Reply::Kind::nil);
}

TEST_F(MultiplexedTest, IdleConnectionSurvivesARestart) {
    auto c = connect();
    ASSERT_TRUE(send(*c, {"PING"}));
    redis->kill();
    redis->start();
    // The loop saw the close while idle: the command goes out on a new connection.
    auto r = send(*c, {"PING"});
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ(stats(*c).connects, 2u);
}

TEST_F(MultiplexedTest, PausedServerTimesOutAndALateReplyNeverReachesTheNextCaller) {
    auto c = connect(200ms, 200ms);
    ASSERT_TRUE(send(*c, {"SET", "other", "other-value"}));
    redis->pause();
    auto lost = send(*c, {"SET", "k", "written-while-paused"});
    ASSERT_FALSE(lost.has_value());
    EXPECT_EQ(lost.error(), errc::reply_timeout);
    EXPECT_EQ(classify(lost.error()), failure_kind::outcome_unknown);

    std::vector<std::jthread> threads;
    std::vector<Result> out(8);
    for (std::size_t i = 0; i < out.size(); ++i) threads.emplace_back([&, i] { out[i] = send(*c, {"GET", "other"}); });
    threads.clear();  // joins
    for (const auto& r : out) {
        ASSERT_FALSE(r.has_value());
        EXPECT_TRUE(r.error() == errc::reply_timeout || r.error() == errc::unavailable) << r.error().message();
    }

    redis->resume();
    // Redis now answers the lost SET: on the old, closed socket, not as this GET's reply.
    auto next = send(*c, {"GET", "other"});
    ASSERT_TRUE(next) << next.error().message();
    EXPECT_EQ(next->str, "other-value");
}

TEST_F(MultiplexedTest, NothingListeningIsUnavailable) {
    RedisEndpoint nowhere;
    nowhere.port = free_port();
    auto c = detail::make_multiplexed_connection({.endpoint = nowhere, .connect_timeout = 1s, .command_timeout = 1s});
    std::vector<Result> out(8);
    {
        std::vector<std::jthread> threads;
        for (auto& r : out) threads.emplace_back([&] { r = send(*c, {"PING"}); });
    }
    for (const auto& r : out) EXPECT_EQ(r.error(), errc::unavailable);
}

TEST_F(MultiplexedTest, DestructorFailsCallersInFlight) {
    auto c = connect();
    Result blocked;
    std::vector<Result> out;
    auto blocker = block(*c, blocked);
    auto others = callers(*c, 8, out, [](std::size_t) { return std::vector<std::string>{"PING"}; });
    c.reset();
    blocker.join();
    others.clear();
    EXPECT_EQ(blocked.error(), errc::connection_lost);
    for (const auto& r : out) EXPECT_EQ(r.error(), errc::unavailable);
}

class MultiplexedAuthTest : public MultiplexedTest {
protected:
    void SetUp() override {
        redis = std::make_unique<RedisServer>(std::vector<std::string>{"--requirepass", "s3cret-pw"});
        redis->cli({"-a", "s3cret-pw", "ACL", "SETUSER", "alice", "on", ">alice-pw", "~*", "&*", "+@all"});
    }
    std::unique_ptr<Connection> connect_as(std::string user, std::string password, int db = 0) {
        auto ep = *parse_redis_url(redis->url());
        ep.user = std::move(user);
        ep.password = std::move(password);
        ep.db = db;
        return detail::make_multiplexed_connection({.endpoint = ep, .connect_timeout = 200ms, .command_timeout = 30s});
    }
};

TEST_F(MultiplexedAuthTest, PasswordAclUserAndDatabase) {
    EXPECT_EQ(send(*connect_as("", "s3cret-pw"), {"PING"})->str, "PONG");
    auto alice = connect_as("alice", "alice-pw", 3);
    ASSERT_TRUE(send(*alice, {"SET", "k", "in-db-3"}));
    EXPECT_EQ(redis->cli({"-a", "s3cret-pw", "-n", "3", "GET", "k"}), "in-db-3");
    EXPECT_EQ(redis->cli({"-a", "s3cret-pw", "EXISTS", "k"}), "0");
}

TEST_F(MultiplexedAuthTest, RefusedCredentialsFailEveryQueuedCaller) {
    for (auto [user, password] :
         std::vector<std::pair<std::string, std::string>>{{"", "wrong"}, {"alice", "wrong"}, {"mallory", "alice-pw"}}) {
        SCOPED_TRACE("user '" + user + "'");
        auto c = connect_as(user, password);
        std::vector<Result> out(8);
        {
            std::vector<std::jthread> threads;
            for (auto& r : out) threads.emplace_back([&] { r = send(*c, {"SET", "k", "v"}); });
        }
        for (const auto& r : out) {
            ASSERT_FALSE(r.has_value());
            EXPECT_EQ(r.error(), errc::auth_failed);
        }
    }
    EXPECT_EQ(redis->cli({"-a", "s3cret-pw", "EXISTS", "k"}), "0");
}

TEST_F(MultiplexedAuthTest, MissingPasswordAndBadDatabaseMatchTheBlockingConnection) {
    // No AUTH is sent: the handshake's policy check is answered NOAUTH, so the command fails
    // auth_failed before it is sent, as on the blocking connection.
    auto anonymous = send(*connect_as("", ""), {"GET", "k"});
    ASSERT_FALSE(anonymous.has_value());
    EXPECT_EQ(anonymous.error(), errc::auth_failed);
    auto blocking = detail::make_hiredis_connection({.endpoint = *parse_redis_url(redis->url()),
                                                     .connect_timeout = std::chrono::seconds(1),
                                                     .command_timeout = std::chrono::seconds(1)});
    const std::string_view get[] = {"GET", "k"};
    auto blocking_anonymous = blocking->command(get);
    ASSERT_FALSE(blocking_anonymous.has_value());
    EXPECT_EQ(blocking_anonymous.error(), errc::auth_failed);
    auto bad_db = send(*connect_as("", "s3cret-pw", 999), {"GET", "k"});
    ASSERT_FALSE(bad_db.has_value());
    EXPECT_EQ(bad_db.error(), errc::protocol_error);
}

TEST_F(MultiplexedAuthTest, UnansweredHandshakeIsUnavailableWithinTheConnectTimeout) {
    redis->pause();  // the kernel accepts the connection; AUTH is never answered
    auto r = send(*connect_as("", "s3cret-pw"), {"SET", "k", "v"});
    redis->resume();
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error(), errc::unavailable) << "the command itself was never sent";
}

}  // namespace
}  // namespace fencelock::test_support
