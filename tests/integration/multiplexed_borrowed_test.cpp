// The multiplexed connection's borrowed socket against a real redis-server: a caller that finds the
// connection idle does its round trip on its own thread (the loop thread stays asleep), callers
// that come meanwhile still leave together through the loop, and a failure on the borrowed socket
// is classified as on the loop: nothing written is unavailable, anything written without a
// reply is an unknown outcome, and the connection is dropped so no late reply is matched.
#include <gtest/gtest.h>

#include <atomic>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "fencelock/error.hpp"
#include "multiplexed_support.hpp"

namespace fencelock::test_support {
namespace {

class MultiplexedBorrowedTest : public MultiplexedFixture {};

TEST_F(MultiplexedBorrowedTest, OneCallerDoesItsRoundTripsWithoutWakingTheLoop) {
    auto c = idle_connection();
    const auto before = stats(*c);
    for (int i = 1; i <= 100; ++i) {
        auto incr = send(*c, {"INCR", "n"});
        ASSERT_TRUE(incr) << incr.error().message();
        ASSERT_EQ(incr->integer, i);
    }
    const std::vector<std::vector<std::string_view>> batch(5, {"INCR", "n"});
    auto replies = c->pipeline(batch);
    ASSERT_TRUE(replies) << replies.error().message();
    for (std::size_t i = 0; i < batch.size(); ++i) EXPECT_EQ((*replies)[i].integer, 101 + static_cast<std::int64_t>(i));

    const auto after = stats(*c);
    EXPECT_EQ(after.requests - before.requests, 101u);
    EXPECT_EQ(after.borrowed - before.borrowed, 101u) << "every call found the connection idle";
    EXPECT_EQ(after.commands - before.commands, 105u);
    EXPECT_EQ(after.loop_turns, before.loop_turns)
        << "through the loop each command wakes its thread at least twice (request, reply)";
    EXPECT_EQ(after.connects, 1u);
    EXPECT_TRUE(after.parked);
}

TEST_F(MultiplexedBorrowedTest, CallersArrivingDuringADirectRoundTripLeaveTogetherThroughTheLoop) {
    auto c = idle_connection();
    const auto direct = stats(*c).borrowed;
    expect_queued_callers_leave_in_one_write(*c);
    EXPECT_EQ(stats(*c).borrowed, direct + 1) << "BLPOP went direct, the callers queued behind it through the loop";
}

TEST_F(MultiplexedBorrowedTest, AfterABatchOfSeveralTheLoopKeepsTheSocketUntilALoneRequest) {
    auto c = connect();
    expect_queued_callers_leave_in_one_write(*c);  // a batch of 31: callers overlap
    EXPECT_FALSE(stats(*c).parked) << "the next caller goes through the loop, with any that overlap it";
    const auto direct = stats(*c).borrowed;
    ASSERT_TRUE(send(*c, {"PING"}));  // a lone request, through the loop
    EXPECT_EQ(stats(*c).borrowed, direct);
    EXPECT_TRUE(eventually([&] { return stats(*c).parked; }));
    ASSERT_TRUE(send(*c, {"PING"}));
    EXPECT_EQ(stats(*c).borrowed, direct + 1);
}

TEST_F(MultiplexedBorrowedTest, ConnectionKilledAfterTheWriteIsAnUnknownOutcome) {
    auto c = idle_connection();
    const auto direct = stats(*c).borrowed;
    Result blocked;
    {
        auto blocker = block(*c, blocked);
        redis->cli({"CLIENT", "KILL", "TYPE", "normal"});  // redis-cli skips itself
    }
    ASSERT_FALSE(blocked.has_value());
    EXPECT_EQ(blocked.error(), errc::connection_lost);
    EXPECT_EQ(classify(blocked.error()), failure_kind::outcome_unknown);
    EXPECT_EQ(stats(*c).borrowed, direct + 1);

    auto after = send(*c, {"PING"});
    ASSERT_TRUE(after) << after.error().message();
    EXPECT_EQ(stats(*c).connects, 2u);
}

TEST_F(MultiplexedBorrowedTest, ServerGoneBeforeTheCommandIsUnavailable) {
    auto c = idle_connection();
    redis->kill();
    // Whether the parked loop saw the close first or the caller's look before writing did,
    // nothing was written: safe to retry.
    auto down = send(*c, {"SET", "k", "v"});
    ASSERT_FALSE(down.has_value());
    EXPECT_EQ(down.error(), errc::unavailable);
    EXPECT_EQ(classify(down.error()), failure_kind::retryable);

    redis->start();
    auto up = send(*c, {"PING"});
    ASSERT_TRUE(up) << up.error().message();
}

TEST_F(MultiplexedBorrowedTest, TimeoutDropsTheConnectionAndTheLateReplyReachesNoOne) {
    auto c = idle_connection(300ms);
    ASSERT_TRUE(send(*c, {"SET", "other", "other-value"}));
    ASSERT_TRUE(eventually([&] { return stats(*c).parked; }));
    const auto direct = stats(*c).borrowed;
    redis->pause();
    auto lost = send(*c, {"SET", "k", "written-while-paused"});
    ASSERT_FALSE(lost.has_value());
    EXPECT_EQ(lost.error(), errc::reply_timeout);
    EXPECT_EQ(classify(lost.error()), failure_kind::outcome_unknown);
    EXPECT_EQ(stats(*c).borrowed, direct + 1);
    redis->resume();
    // Redis now answers the SET (+OK) on the closed socket, not as this GET's reply.
    auto next = send(*c, {"GET", "other"});
    ASSERT_TRUE(next) << next.error().message();
    EXPECT_EQ(next->str, "other-value");
    EXPECT_EQ(stats(*c).connects, 2u);
}

TEST_F(MultiplexedBorrowedTest, DestructorEndsADirectRoundTrip) {
    auto c = idle_connection();
    Result blocked;
    auto blocker = block(*c, blocked);
    c.reset();  // returns once the caller gave the socket back
    blocker.join();
    ASSERT_FALSE(blocked.has_value());
    EXPECT_EQ(blocked.error(), errc::connection_lost) << "BLPOP was written: the outcome is unknown";
}

TEST_F(MultiplexedBorrowedTest, DirectAndQueuedCallersInterleaveAndEachGetsItsOwnReplies) {
    auto c = connect();
    constexpr int threads = 4, rounds = 300;
    std::atomic<int> mismatches{0};
    {
        std::vector<std::jthread> workers;
        for (int t = 0; t < threads; ++t)
            workers.emplace_back([&, t] {
                const std::string key = "counter:" + std::to_string(t);
                for (int i = 1; i <= rounds; ++i) {
                    auto incr = send(*c, {"INCR", key});
                    if (!incr || incr->integer != i) ++mismatches;
                    if (i % 50 == 0) std::this_thread::yield();
                }
            });
    }
    EXPECT_EQ(mismatches.load(), 0);
    const auto s = stats(*c);
    EXPECT_EQ(s.requests, static_cast<std::uint64_t>(threads * rounds));
    EXPECT_EQ(s.connects, 1u);
    // Which path each call took depends on timing; both are exercised under ThreadSanitizer.
    std::cout << "borrowed " << s.borrowed << " of " << s.requests << ", loop turns " << s.loop_turns << "\n";
}

}  // namespace
}  // namespace fencelock::test_support
