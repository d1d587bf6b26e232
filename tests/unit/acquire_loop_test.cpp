// The acquire loop without Redis: each test scripts the server's replies and release messages
// and checks the steps the loop asked for.
#include "lease/acquire_loop.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "common/backoff_delays.hpp"
#include "fencelock/error.hpp"
#include "scripted_connection.hpp"

namespace fencelock::test_support {
namespace {

using Log = std::vector<std::string>;

// Mirrors the client: a waiting acquisition keeps a place in Redis when it is fair or when
// release messages can wake it.
detail::AcquirePlan plan(milliseconds wait, bool notifications = true, bool fair = false) {
    return {.owner = *OwnerToken::make("owner-1"),
            .wait = wait,
            .backoff = {.base = 10ms, .max = 1000ms},
            .fair = fair,
            .notifications = notifications,
            .takes_place = wait > 0ms && (fair || notifications),
            .token_is_private = true,
            .command_timeout = 500ms};
}

std::unexpected<std::error_code> failure(errc e) { return std::unexpected(make_error_code(e)); }

TEST(AcquireLoop, AFreeLockIsGrantedByTheFirstAttempt) {
    ScriptedAcquire s(plan(0ms));
    s.reply(granted(7));
    const auto finish = s.run();
    EXPECT_EQ(s.log(), (Log{"attempt", "finish acquired"}));
    EXPECT_EQ(finish.grant.fence, FencingToken{7});
    EXPECT_EQ(s.loop().attempts(), 1u);
}

TEST(AcquireLoop, ASingleAttemptOnAHeldLockIsContendedAndLeavesNoPlace) {
    ScriptedAcquire s(plan(0ms));
    s.reply(contended(1234ms));
    const auto finish = s.run();
    EXPECT_EQ(s.log(), (Log{"attempt", "finish contended"}));
    EXPECT_FALSE(finish.error);
    EXPECT_EQ(s.loop().holder_ttl(), 1234ms);
}

TEST(AcquireLoop, ContendedThenJoinsTheLineLooksOnceMoreAndTheReleaseWakesIt) {
    ScriptedAcquire s(plan(5s));
    s.reply(contended(10s)).subscription(true).reply(contended(10s)).release_after(5ms).reply(granted(8));
    const auto finish = s.run();
    EXPECT_EQ(s.log(), (Log{"attempt", "join", "attempt", "wait", "attempt", "finish acquired"}));
    EXPECT_EQ(finish.grant.fence, FencingToken{8});
    EXPECT_EQ(s.loop().attempts(), 3u);
    // Subscribed: the wait is the holder's remaining lease, capped by backoff.max.
    ASSERT_EQ(s.waits().size(), 1u);
    EXPECT_EQ(s.waits()[0], 1000ms);
}

TEST(AcquireLoop, TheDeadlineEndsTheWaitWithATimeoutAndLeavesTheLine) {
    ScriptedAcquire s(plan(100ms));
    s.reply(contended(10s)).subscription(true).reply(contended(10s)).reply(contended(10s));
    const auto finish = s.run();
    EXPECT_EQ(s.log(), (Log{"attempt", "join", "attempt", "wait", "attempt", "leave_line", "finish timeout"}));
    EXPECT_EQ(finish.result, AcquireResult::timeout);
    EXPECT_FALSE(finish.error);
    // Neither the subscription nor the wait runs past the deadline.
    EXPECT_EQ(s.untils(), (std::vector<milliseconds>{100ms, 100ms}));
    EXPECT_EQ(s.owners().back(), "owner-1");
}

TEST(AcquireLoop, ALostReplyIsRetriedWithTheSameTokenAndTheGrantComesBack) {
    ScriptedAcquire s(plan(5s, false));
    s.reply(failure(errc::reply_timeout)).reply(granted(9, 30s, true));
    const auto finish = s.run();
    EXPECT_EQ(s.log(), (Log{"attempt", "sleep", "attempt", "finish acquired"}));
    EXPECT_EQ(s.owners(), (Log{"owner-1", "owner-1"}));
    EXPECT_TRUE(finish.grant.reacquired);
    EXPECT_EQ(finish.grant.fence, FencingToken{9});
}

TEST(AcquireLoop, AnErrorIsNoReasonToSubscribe) {
    ScriptedAcquire s(plan(5s));
    s.reply(failure(errc::server_busy)).reply(granted(3));
    s.run();
    EXPECT_EQ(s.log(), (Log{"attempt", "sleep", "attempt", "finish acquired"}));
}

TEST(AcquireLoop, TheFailoverGraceCountsAsContentionNotAsAFailure) {
    ScriptedAcquire s(plan(5s));
    s.reply(failure(errc::failover_grace)).reply(failure(errc::server_busy)).reply(granted(3));
    s.run();
    EXPECT_EQ(s.loop().contended_attempts(), 1u);
    EXPECT_EQ(s.loop().failed_attempts(), 1u);  // only the server_busy one
}

TEST(AcquireLoop, UnknownOutcomesUntilTheDeadlineFreeAPrivateTokensLease) {
    ScriptedAcquire s(plan(50ms));
    for (int i = 0; i < 100; ++i) s.reply(failure(errc::reply_timeout));
    const auto finish = s.run();
    EXPECT_EQ(finish.result, AcquireResult::error);
    EXPECT_EQ(finish.error, make_error_code(errc::reply_timeout));
    const Log tail(s.log().end() - 3, s.log().end());
    EXPECT_EQ(tail, (Log{"leave_line", "release", "finish error"}));
    for (const auto& owner : s.owners()) EXPECT_EQ(owner, "owner-1");
}

TEST(AcquireLoop, ACallerWhoKnowsTheTokenRetriesItselfSoNothingIsReleased) {
    auto p = plan(50ms, false);
    p.token_is_private = false;
    ScriptedAcquire s(p);
    for (int i = 0; i < 100; ++i) s.reply(failure(errc::connection_lost));
    const auto finish = s.run();
    EXPECT_EQ(finish.error, make_error_code(errc::connection_lost));
    EXPECT_EQ(s.log().back(), "finish error");
    EXPECT_EQ(std::ranges::count(s.log(), std::string("release")), 0);
    EXPECT_EQ(std::ranges::count(s.log(), std::string("leave_line")), 0);  // no place was taken
}

TEST(AcquireLoop, ARetryableErrorAfterAContendedReplyIsNotAnUnknownGrant) {
    ScriptedAcquire s(plan(30ms));
    s.reply(contended(10s)).subscription(false);
    for (int i = 0; i < 100; ++i) s.reply(failure(errc::server_busy));
    s.run();
    EXPECT_EQ(std::ranges::count(s.log(), std::string("release")), 0);
    EXPECT_EQ(std::ranges::count(s.log(), std::string("leave_line")), 1);  // the contended reply took a place
    EXPECT_EQ(s.log().back(), "finish error");
}

// Replica acknowledgement: a grant WAIT did not confirm is released at once and never finishes
// as acquired; not_replicated is retried like any retryable failure.
detail::AcquireReply unreplicated(std::uint64_t fence, errc why = errc::not_replicated) {
    auto reply = granted(fence);
    reply.unreplicated = make_error_code(why);
    return reply;
}

TEST(AcquireLoop, AnUnreplicatedGrantIsReleasedAndASingleAttemptFailsWithNotReplicated) {
    ScriptedAcquire s(plan(0ms));
    s.reply(unreplicated(7));
    const auto finish = s.run();
    EXPECT_EQ(s.log(), (Log{"attempt", "release", "finish error"}));
    EXPECT_EQ(finish.error, make_error_code(errc::not_replicated));
    EXPECT_EQ(s.owners().back(), "owner-1");  // compare-and-delete with the same token
}

TEST(AcquireLoop, AnUnreplicatedGrantIsRetriedWithinTheWait) {
    ScriptedAcquire s(plan(5s, false));
    s.reply(unreplicated(7)).reply(granted(8));
    const auto finish = s.run();
    EXPECT_EQ(s.log(), (Log{"attempt", "release", "sleep", "attempt", "finish acquired"}));
    EXPECT_EQ(finish.grant.fence, FencingToken{8});
    EXPECT_EQ(s.owners(), (Log{"owner-1", "owner-1", "owner-1"}));
}

TEST(AcquireLoop, UnreplicatedUntilTheDeadlineReleasesEachGrantOnceAndEndsNotReplicated) {
    ScriptedAcquire s(plan(50ms, false));
    for (int i = 0; i < 100; ++i) s.reply(unreplicated(7));
    const auto finish = s.run();
    EXPECT_EQ(finish.error, make_error_code(errc::not_replicated));
    EXPECT_EQ(std::ranges::count(s.log(), std::string("release")), std::ranges::count(s.log(), std::string("attempt")));
    EXPECT_EQ(s.log().back(), "finish error");
}

TEST(AcquireLoop, AFailedWaitOnAGrantReleasesItAndAFatalOneEndsAtOnce) {
    ScriptedAcquire s(plan(5s));
    s.reply(unreplicated(7, errc::protocol_error));
    const auto finish = s.run();
    EXPECT_EQ(s.log(), (Log{"attempt", "release", "finish error"}));
    EXPECT_EQ(finish.error, make_error_code(errc::protocol_error));
}

// retry_errors = false (`run` without --wait): refusals and a promoted master's grace are waited
// out, but the first Redis failure ends the acquisition with its error.
TEST(AcquireLoop, WithoutRetriesTheFirstFailureEndsTheWaitButContentionAndTheGraceDoNot) {
    auto p = plan(5s);
    p.retry_errors = false;
    ScriptedAcquire s(p);
    s.reply(contended(10s)).subscription(true).reply(failure(errc::failover_grace)).reply(failure(errc::unavailable));
    const auto finish = s.run();
    EXPECT_EQ(finish.error, make_error_code(errc::unavailable));
    EXPECT_EQ(s.loop().attempts(), 3u);
    EXPECT_EQ(s.loop().contended_attempts(), 2u);
    ASSERT_GE(s.log().size(), 2u);
    EXPECT_EQ(s.log()[s.log().size() - 2], "leave_line") << "its place in the line is given up, as at the deadline";

    // A lost reply may have granted the lease to a token nobody else knows: it is freed.
    ScriptedAcquire lost(p);
    lost.reply(failure(errc::reply_timeout));
    EXPECT_EQ(lost.run().error, make_error_code(errc::reply_timeout));
    EXPECT_EQ(lost.log(), (Log{"attempt", "leave_line", "release", "finish error"}));

    ScriptedAcquire unreplicated_once(p);
    unreplicated_once.reply(unreplicated(7));
    EXPECT_EQ(unreplicated_once.run().error, make_error_code(errc::not_replicated));
    EXPECT_EQ(unreplicated_once.loop().attempts(), 1u) << "not retried within the wait";
}

TEST(AcquireLoop, AFatalErrorFailsClosedAtOnce) {
    ScriptedAcquire s(plan(5s));
    s.reply(contended(10s)).subscription(true).reply(failure(errc::corrupt_key));
    const auto finish = s.run();
    EXPECT_EQ(s.log(), (Log{"attempt", "join", "attempt", "finish error"}));
    EXPECT_EQ(finish.error, make_error_code(errc::corrupt_key));
}

TEST(AcquireLoop, AFairWaiterJoinsFirstAndHandsOnAReleaseThatIsAnotherWaitersTurn) {
    ScriptedAcquire s(plan(5s, true, true));
    s.subscription(true)
        .reply(contended(2s, true))
        .release_after(3ms)
        .reply(contended(2s, true))
        .release_after(3ms)
        .reply(granted(11));
    s.run();
    EXPECT_EQ(s.log(), (Log{"join", "attempt", "wait", "attempt", "pass_on", "wait", "attempt", "finish acquired"}));
    EXPECT_EQ(s.untils().front(), 500ms);  // the subscription is awaited no longer than command_timeout
}

TEST(AcquireLoop, ANewcomerWaitsBehindThisClientsEarlierWaiters) {
    ScriptedAcquire behind(plan(5s));
    behind.subscription(true, 2).release_after(7ms).reply(granted(4));
    behind.run(true);
    EXPECT_EQ(behind.log(), (Log{"join", "wait", "attempt", "finish acquired"}));
    EXPECT_EQ(behind.untils().back(), 1000ms);  // no longer than backoff.max

    ScriptedAcquire at_head(plan(5s));
    at_head.subscription(true, 0).reply(granted(5));
    at_head.run(true);
    EXPECT_EQ(at_head.log(), (Log{"join", "attempt", "finish acquired"}));
}

TEST(AcquireLoop, StopWhileWokenHandsTheReleaseOnAndLeaves) {
    ScriptedAcquire s(plan(5s));
    s.reply(contended(10s)).subscription(true).reply(contended(10s)).release_after(5ms).stop_during_wait(1);
    const auto finish = s.run();
    EXPECT_EQ(s.log(), (Log{"attempt", "join", "attempt", "wait", "pass_on", "leave_line", "finish timeout"}));
    EXPECT_FALSE(finish.error);
}

TEST(AcquireLoop, PollingDelaysStayUnderTheFullJitterCeilings) {
    auto p = plan(10s, false);
    p.backoff = {.base = 10ms, .max = 80ms};
    for (std::uint64_t seed = 1; seed <= 20; ++seed) {
        ScriptedAcquire s(p, seed);
        for (int i = 0; i < 12; ++i) s.reply(contended(10s));
        s.reply(granted(1));
        s.run();
        ASSERT_EQ(s.waits().size(), 12u);
        for (unsigned i = 0; i < s.waits().size(); ++i)
            EXPECT_LE(s.waits()[i], detail::backoff_ceiling(p.backoff, i)) << "seed " << seed << " sleep " << i;
    }
}

TEST(AcquireLoop, ASubscribedWaiterSleepsUntilTheHolderLeaseEndsPlusJitter) {
    for (std::uint64_t seed = 1; seed <= 20; ++seed) {
        ScriptedAcquire s(plan(10s), seed);
        s.reply(contended(30ms)).subscription(true).reply(contended(30ms)).reply(granted(2));
        s.run();
        ASSERT_EQ(s.waits().size(), 1u);
        EXPECT_GE(s.waits()[0], 30ms);
        EXPECT_LE(s.waits()[0], 40ms);  // ttl + up to backoff.base
    }
}

TEST(AcquireLoop, NoDelayRunsPastTheDeadline) {
    auto p = plan(20ms, false);
    p.backoff = {.base = 1000ms, .max = 1000ms};
    for (std::uint64_t seed = 1; seed <= 20; ++seed) {
        ScriptedAcquire s(p, seed);
        for (int i = 0; i < 100; ++i) s.reply(contended(10s));
        const auto finish = s.run();
        EXPECT_EQ(finish.result, AcquireResult::timeout);
        EXPECT_LE(s.waits().front(), 19ms);
        EXPECT_GE(s.elapsed(), 20ms);
        EXPECT_LE(s.elapsed(), 21ms);  // the deadline plus the last attempt's round trip
    }
}

TEST(AcquireLoop, DoneWithoutAPendingStepIsMisuse) {
    std::mt19937_64 rng(1);
    detail::AcquireLoop loop(plan(0ms), rng);
    EXPECT_THROW(loop.done(), std::logic_error);
}

}  // namespace
}  // namespace fencelock::test_support
