// Direct handoff without Redis: the acquire loop fed scripted replies and grant messages (when
// a grant is trusted, confirmed or given back), the grant message's codec, the refused reply's
// fence, and the subscriber plan delivering a grant to its grantee only.
#include <gtest/gtest.h>

#include <algorithm>

#include "coordinator/redis/calls/acquire_call.hpp"
#include "coordinator/redis/calls/grant_message.hpp"
#include "fencelock/error.hpp"
#include "lease/acquire_loop.hpp"
#include "scripted_connection.hpp"

namespace fencelock::test_support {
namespace {

using Log = std::vector<std::string>;
using Notifies = std::vector<detail::SubscriberPlan::Notify>;

// A waiting acquisition of a client with release notifications, as the client plans it.
detail::AcquirePlan plan(milliseconds wait = 5s, bool trust = true) {
    return {.owner = *OwnerToken::make("owner-1"),
            .wait = wait,
            .backoff = {.base = 10ms, .max = 1000ms},
            .notifications = true,
            .takes_place = true,
            .token_is_private = true,
            .command_timeout = 500ms,
            .direct_grants = true,
            .trust_grants = trust,
            .drift_factor = 0.01};
}

std::unexpected<std::error_code> failure(errc e) { return std::unexpected(make_error_code(e)); }

long count(const Log& log, const char* what) { return std::ranges::count(log, std::string(what)); }

// The first attempt is refused unwatched, the second (watched, opting in) is refused too and
// saw fence `seen`; then the test's release comes.
ScriptedAcquire& queued_behind(ScriptedAcquire& s, std::uint64_t seen) {
    return s.reply(refused_at(seen)).subscription(true).reply(refused_at(seen));
}

TEST(DirectGrant, ANewerGrantIsTakenWithoutARoundTripCountedFromTheRefusedAttempt) {
    ScriptedAcquire s(plan());
    queued_behind(s, 5).grant_after(5ms, 6, 4s);
    const auto finish = s.run();
    EXPECT_EQ(s.log(), (Log{"attempt", "join", "attempt", "wait", "granted", "finish acquired"}));
    EXPECT_TRUE(finish.direct);
    EXPECT_EQ(finish.grant.fence, FencingToken{6});
    EXPECT_EQ(finish.grant.ttl, 4s);
    EXPECT_FALSE(finish.grant.reacquired);
    EXPECT_EQ(s.at(finish.sent), 1ms);  // the second attempt went out after the first's round trip
    EXPECT_EQ(s.loop().attempts(), 2u);
    EXPECT_EQ(s.loop().direct_grants(), 1u);
}

// A plain acquire(): another client's grant is bounded by the waiter's place, so a grant shorter
// than the lease asked is renewed to it before the acquisition ends.
detail::AcquirePlan extending_plan() {
    auto p = plan();
    p.lease = 30s;
    p.extend_grants = true;
    return p;
}
detail::RenewReply renewed_for(milliseconds ttl) {
    return {.status = RenewStatus::renewed, .fence = FencingToken{6}, .ttl = ttl, .server_time = std::nullopt};
}

TEST(DirectGrant, AShortGrantIsExtendedToTheLeaseAndCountsFromTheExtension) {
    ScriptedAcquire s(extending_plan());
    queued_behind(s, 5).grant_after(5ms, 6, 4s).extend_reply(renewed_for(30s), 2ms);
    const auto finish = s.run();
    EXPECT_EQ(s.log(), (Log{"attempt", "join", "attempt", "wait", "granted", "extend", "finish acquired"}));
    EXPECT_EQ(s.owners().back(), "owner-1");
    EXPECT_EQ(finish.grant.fence, FencingToken{6});
    EXPECT_EQ(finish.grant.ttl, 30s);
    EXPECT_EQ(s.at(finish.sent), 7ms) << "the lease counts from the renewal's send";
    EXPECT_TRUE(finish.direct);
    EXPECT_EQ(s.loop().attempts(), 2u) << "an extension is no attempt";
}

TEST(DirectGrant, AGrantAsLongAsTheLeaseIsNotExtended) {
    ScriptedAcquire s(extending_plan());
    queued_behind(s, 5).grant_after(5ms, 6, 30s);
    EXPECT_EQ(s.run().grant.ttl, 30s);
    EXPECT_EQ(count(s.log(), "extend"), 0);
}

TEST(DirectGrant, AKeptLeaseIsNotExtendedHereTheKeeperDoesIt) {
    auto kept = extending_plan();
    kept.extend_grants = false;
    ScriptedAcquire s(kept);
    queued_behind(s, 5).grant_after(5ms, 6, 4s);
    EXPECT_EQ(s.run().grant.ttl, 4s);
    EXPECT_EQ(count(s.log(), "extend"), 0);
}

TEST(DirectGrant, AGrantThatLapsedBeforeItsExtensionIsTriedForAgain) {
    ScriptedAcquire s(extending_plan());
    queued_behind(s, 5)
        .grant_after(5ms, 6, 4s)
        .extend_reply(detail::RenewReply{
            .status = RenewStatus::not_owner, .fence = std::nullopt, .ttl = {}, .server_time = std::nullopt});
    s.reply(granted(9, 30s));
    const auto finish = s.run();
    EXPECT_EQ(s.log(), (Log{"attempt", "join", "attempt", "wait", "granted", "extend", "attempt", "finish acquired"}));
    EXPECT_EQ(finish.grant.fence, FencingToken{9});
    EXPECT_EQ(finish.grant.ttl, 30s);
}

TEST(DirectGrant, AnExtensionThatFailsLeavesTheShortGrantAsItCame) {
    ScriptedAcquire s(extending_plan());
    queued_behind(s, 5).grant_after(5ms, 6, 4s).extend_reply(failure(errc::reply_timeout));
    const auto finish = s.run();
    EXPECT_EQ(finish.result, AcquireResult::acquired);
    EXPECT_EQ(finish.grant.ttl, 4s) << "the caller's Lease reports the TTL it has";
    EXPECT_EQ(s.at(finish.sent), 1ms);
}

TEST(DirectGrant, AConfirmedHandedLeaseIsExtendedToo) {
    // Fence 7 is not newer than the refused one: confirmed, and "already ours, handed" with 3 s left.
    ScriptedAcquire s(extending_plan());
    auto handed = granted(7, 3s, true);
    handed.handed = true;
    queued_behind(s, 7).grant_after(5ms, 7).reply(handed).extend_reply(renewed_for(30s));
    const auto finish = s.run();
    EXPECT_EQ(s.log(), (Log{"attempt", "join", "attempt", "wait", "granted", "attempt", "extend", "finish acquired"}));
    EXPECT_EQ(finish.grant.ttl, 30s);
}

// Successors (docs/DESIGN.md, "Successors"): a waiter that joins while its own client holds
// the lock waits for that client's release to name it, without an attempt; the release's reply
// is trusted as it is (the script's own result), counted from the release's send.
TEST(DirectGrant, ASuccessorTakesItsClientsReleaseGrantWithoutAnyAttempt) {
    ScriptedAcquire s(plan());
    s.successor_join(10s, 2).reply_grant_after(5ms, 6, 30s, 1ms);
    const auto finish = s.run(true, true);
    EXPECT_EQ(s.log(), (Log{"join", "wait", "granted", "finish acquired"}));
    EXPECT_EQ(finish.grant.fence, FencingToken{6});
    EXPECT_EQ(finish.grant.ttl, 30s);
    EXPECT_EQ(s.at(finish.sent), 4ms) << "counted from the release's send";
    EXPECT_EQ(s.loop().attempts(), 0u);
}

TEST(DirectGrant, ASuccessorNeverNamedAttemptsOnceItsClientsLeaseWouldHaveEnded) {
    ScriptedAcquire s(plan());
    s.successor_join(800ms).reply(granted(9));
    const auto finish = s.run(true, true);
    EXPECT_EQ(s.log(), (Log{"join", "wait", "attempt", "finish acquired"}));
    EXPECT_EQ(s.untils().at(1), 800ms) << "it waits until that lease would end";
    EXPECT_EQ(finish.grant.fence, FencingToken{9});
}

TEST(DirectGrant, AReleaseReplyPastItsTtlIsConfirmedInstead) {
    ScriptedAcquire s(plan());
    s.successor_join(10s).reply_grant_after(5ms, 6, 3ms, 4ms).reply(granted(6, 30s, true));
    s.run(true, true);
    EXPECT_EQ(s.log(), (Log{"join", "wait", "granted", "attempt", "finish acquired"}));
}

// Named by a release: a lease may have been handed to it, so it gives up through leave_line
// (which deletes a handed lease) even when it never took a place itself.
TEST(DirectGrant, ANamedSuccessorThatGivesUpSendsLeaveLine) {
    for (const bool named : {false, true}) {
        ScriptedAcquire s(plan());
        s.successor_join(800ms).reply(failure(errc::corrupt_key));  // a fatal error: it gives up
        if (named) s.loop().named_successor();
        const auto finish = s.run(true, true);
        EXPECT_EQ(finish.result, AcquireResult::error);
        EXPECT_EQ(count(s.log(), "leave_line"), named ? 1 : 0) << (named ? "named" : "not named");
    }
}

TEST(DirectGrant, AGrantNoNewerThanTheRefusedFenceIsConfirmedWithTheSameToken) {
    // Fence 7 may predate the attempt that saw 7 (message and reply travel apart): confirm.
    ScriptedAcquire s(plan());
    queued_behind(s, 7).grant_after(5ms, 7).reply(granted(7, 3s, true));
    const auto finish = s.run();
    EXPECT_EQ(s.log(), (Log{"attempt", "join", "attempt", "wait", "granted", "attempt", "finish acquired"}));
    EXPECT_FALSE(finish.direct);
    EXPECT_EQ(finish.grant.fence, FencingToken{7});
    EXPECT_FALSE(finish.grant.reacquired);  // the grant's first sight, not a retry
    EXPECT_EQ(s.owners(), (Log{"owner-1", "owner-1", "owner-1"}));
}

TEST(DirectGrant, ALeaseFoundOursAfterARefusalIsANewAcquisitionUnlessAnOutcomeWasUnknown) {
    // The grant was found by the timer's attempt before its message came.
    ScriptedAcquire found(plan());
    queued_behind(found, 5).reply(granted(6, 3s, true));
    EXPECT_FALSE(found.run().grant.reacquired);
    // After a lost reply the lease may be that attempt's own grant: a retry, as before.
    ScriptedAcquire retried(plan());
    queued_behind(retried, 5).reply(failure(errc::reply_timeout)).reply(granted(6, 3s, true));
    EXPECT_TRUE(retried.run().grant.reacquired);
}

TEST(DirectGrant, ALeaseHandedOnIsANewAcquisitionEvenAfterAnUnknownOutcome) {
    // The script says the lease was handed on (`handed` 1): no lost reply of ours got it.
    auto handed = granted(6, 3s, true);
    handed.handed = true;
    ScriptedAcquire s(plan());
    queued_behind(s, 5).reply(failure(errc::reply_timeout)).reply(handed);
    EXPECT_FALSE(s.run().grant.reacquired);
}

TEST(DirectGrant, AStaleGrantIsConfirmedAndARefusalKeepsTheWaiterWaiting) {
    ScriptedAcquire s(plan(100ms));
    queued_behind(s, 9).grant_after(5ms, 8).reply(refused_at(10)).reply(refused_at(10));
    const auto finish = s.run();
    EXPECT_EQ(finish.result, AcquireResult::timeout);
    EXPECT_EQ(s.log()[5], "attempt");  // the confirmation
    EXPECT_EQ(s.log()[6], "wait");
    EXPECT_EQ(count(s.log(), "leave_line"), 1);
}

TEST(DirectGrant, AGrantWhoseTtlMayHaveRunOutSinceTheAttemptIsConfirmed) {
    ScriptedAcquire s(plan());
    queued_behind(s, 5).grant_after(200ms, 6, 150ms).reply(refused_at(7));
    s.reply(granted(8));
    s.release_after(1ms);
    const auto finish = s.run();
    EXPECT_EQ(s.log()[5], "attempt");
    EXPECT_EQ(finish.grant.fence, FencingToken{8});
}

TEST(DirectGrant, TheDriftMarginCountsAgainstTheGrant) {
    // 4 s less 1 %: 3960 ms after the attempt was sent is too late even though 4 s is not up.
    ScriptedAcquire s(plan());
    s.reply(refused_at(5), 0ms).subscription(true).reply(refused_at(5), 3000ms).grant_after(961ms, 6, 4s);
    s.reply(granted(6, 39ms, true));
    EXPECT_FALSE(s.run().direct);
}

TEST(DirectGrant, ARefusalThatNamedNoFenceMakesEveryGrantAConfirmation) {
    ScriptedAcquire s(plan());
    s.reply(contended(10s)).subscription(true).reply(contended(10s)).grant_after(5ms, 6).reply(granted(6, 4s, true));
    EXPECT_FALSE(s.run().direct);
}

TEST(DirectGrant, WithReplicaAcknowledgementAGrantIsAlwaysConfirmed) {
    ScriptedAcquire s(plan(5s, false));
    queued_behind(s, 5).grant_after(5ms, 6).reply(granted(6, 4s, true));
    const auto finish = s.run();
    EXPECT_FALSE(finish.direct);
    EXPECT_EQ(count(s.log(), "attempt"), 3);
}

TEST(DirectGrant, InAFailoverGraceAGrantIsConfirmed) {
    ScriptedAcquire s(plan());
    queued_behind(s, 5).in_grace(true).grant_after(5ms, 6).reply(granted(6, 4s, true));
    EXPECT_FALSE(s.run().direct);
}

TEST(DirectGrant, AGrantRacingAStopIsGivenBackThroughLeaveLine) {
    ScriptedAcquire s(plan());
    queued_behind(s, 5).stop_during_wait(1).grant_after(5ms, 6);
    const auto finish = s.run();
    EXPECT_NE(finish.result, AcquireResult::acquired);
    EXPECT_EQ(s.log(), (Log{"attempt", "join", "attempt", "wait", "granted", "leave_line", "finish timeout"}));
    EXPECT_EQ(s.owners().back(), "owner-1");
}

TEST(DirectGrant, AFatalErrorWhileConfirmingLeavesTheLineSoNoGrantIsKept) {
    ScriptedAcquire s(plan());
    queued_behind(s, 5).grant_after(5ms, 5).reply(failure(errc::corrupt_key));
    const auto finish = s.run();
    EXPECT_EQ(finish.error, make_error_code(errc::corrupt_key));
    EXPECT_EQ(s.log(), (Log{"attempt", "join", "attempt", "wait", "granted", "attempt", "leave_line", "finish error"}));
}

TEST(DirectGrant, EveryLocalWaiterAttemptsOnArrivalToTakeAPlace) {
    // Without direct grants a newcomer behind two local waiters sleeps first (acquire_loop_test).
    ScriptedAcquire s(plan());
    s.subscription(true, 2).reply(refused_at(3)).grant_after(2ms, 4);
    const auto finish = s.run(true);
    EXPECT_EQ(s.log(), (Log{"join", "attempt", "wait", "granted", "finish acquired"}));
    EXPECT_TRUE(finish.direct);
}

// --- the grant message and the refused reply ------------------------------------------------

TEST(GrantMessage, NamesOwnerFenceAndTtl) {
    const auto m = detail::decode_grant_message("grant owner-1 1733000000000001 4000");
    ASSERT_TRUE(m);
    EXPECT_EQ(m->owner, "owner-1");
    EXPECT_EQ(m->grant.fence, FencingToken{1733000000000001});
    EXPECT_EQ(m->grant.ttl, 4000ms);
}

TEST(GrantMessage, AnythingElseIsNoGrant) {
    for (const char* bad :
         {"", "owner-1", "grant", "grant ", "grant owner-1", "grant owner-1 12", "grant  12 4000", "grant o x 4000",
          "grant o 12 0", "grant o 12 -5", "grant o 12 4000 extra", "grant o 12 86400001", "Grant o 12 4000"})
        EXPECT_FALSE(detail::decode_grant_message(bad)) << bad;
    EXPECT_TRUE(detail::is_grant_message("grant o x"));  // malformed, but not a plain wake-up
    EXPECT_FALSE(detail::is_grant_message("owner-1"));
}

TEST(DecodeAcquire, ARefusalCarriesTheFenceTheScriptSaw) {
    const auto held = detail::decode_acquire(A({I(0), I(4'200), I(0), S("17")})).value();
    EXPECT_FALSE(held.acquired);
    EXPECT_FALSE(held.queued);
    EXPECT_EQ(held.seen_fence, FencingToken{17});
    const auto queued = detail::decode_acquire(A({I(0), I(3'900), I(1), S("18")})).value();
    EXPECT_TRUE(queued.queued);
    EXPECT_EQ(queued.seen_fence, FencingToken{18});
    // A holder hash without a fence truncates the reply: refused, fence unknown.
    EXPECT_FALSE(detail::decode_acquire(A({I(0), I(4'200), I(0)})).value().seen_fence);
    EXPECT_FALSE(detail::decode_acquire(A({I(0), I(4'200)})).value().seen_fence);
    for (const Reply& bad : {A({I(0), I(1), I(2), S("1")}), A({I(0), I(1), I(0), S("1"), I(0)})})
        EXPECT_EQ(detail::decode_acquire(bad).error(), make_error_code(errc::protocol_error));
    // The holder's fence as its lease hash holds it: not a fence there is a damaged key.
    for (const Reply& damaged : {A({I(0), I(1), I(1), S("x")}), A({I(0), I(1), I(0), S("-1")})})
        EXPECT_EQ(detail::decode_acquire(damaged).error(), make_error_code(errc::corrupt_key));
}

// --- the subscriber plan --------------------------------------------------------------------

TEST(DirectGrantPlan, AGrantWakesItsGranteeOnlyAndIsTakenOnce) {
    detail::SubscriberPlan plan;
    ScriptedSubscriberConnection redis{plan};
    const auto a = plan.join("ch", "a").ticket;
    const auto b = plan.join("ch", "b").ticket;
    redis.flush();
    redis.ack("ch");
    EXPECT_EQ(redis.message("ch", "grant b 12 4000"), (Notifies{{"ch", b}}));
    EXPECT_EQ(redis.message("ch", "grant elsewhere 13 4000"), Notifies{});
    EXPECT_EQ(redis.message("ch", "grant a 14"), Notifies{});  // malformed: wakes nobody
    EXPECT_FALSE(plan.take_wake("ch", a));
    EXPECT_FALSE(plan.take_grant("ch", a));
    EXPECT_TRUE(plan.take_wake("ch", b));
    const auto g = plan.take_grant("ch", b);
    ASSERT_TRUE(g);
    EXPECT_EQ(g->fence, FencingToken{12});
    EXPECT_EQ(g->ttl, 4000ms);
    EXPECT_FALSE(plan.take_grant("ch", b));
}

TEST(DirectGrantPlan, OfTwoGrantsTheNewerIsKeptAndAnAwakeWaiterStillGetsIt) {
    detail::SubscriberPlan plan;
    ScriptedSubscriberConnection redis{plan};
    const auto a = plan.join("ch", "a").ticket;
    redis.flush();
    redis.ack("ch");
    EXPECT_EQ(redis.message("ch"), (Notifies{{"ch", a}}));  // awake already
    EXPECT_EQ(redis.message("ch", "grant a 20 4000"), (Notifies{{"ch", a}}));
    EXPECT_EQ(redis.message("ch", "grant a 19 4000"), (Notifies{{"ch", a}}));
    EXPECT_EQ(plan.take_grant("ch", a)->fence, FencingToken{20});
}

TEST(DirectGrantPlan, ASubscriptionLingersAfterTheLastWaiterAndANewWaiterKeepsIt) {
    detail::SubscriberPlan plan(1000ms);
    ScriptedSubscriberConnection redis{plan};
    const steady_time t0{std::chrono::hours(1)};
    const auto a = plan.join("ch", "a").ticket;
    redis.flush();
    redis.ack("ch");
    EXPECT_TRUE(plan.leave("ch", a, true, t0).last);
    EXPECT_EQ(plan.commands({}, t0 + 999ms).size(), 0u);
    EXPECT_TRUE(plan.confirmed_now("ch")) << "lingering: still subscribed";
    EXPECT_EQ(plan.next_unsubscribe(), t0 + 1000ms);
    plan.join("ch", "b");  // a new waiter finds it standing: nothing to send
    EXPECT_EQ(redis.flush(), std::vector<std::string>{});
    EXPECT_FALSE(plan.next_unsubscribe());
}

TEST(DirectGrantPlan, ALingeringSubscriptionGoesOnceItsTimeIsUp) {
    detail::SubscriberPlan plan(1000ms);
    const steady_time t0{std::chrono::hours(1)};
    const auto route = [](const std::string&) -> std::optional<detail::SubscriberPlan::Node> {
        return detail::SubscriberPlan::Node{};
    };
    const auto a = plan.join("ch", "a").ticket;
    plan.commands(route, t0);
    plan.leave("ch", a, false, t0);
    const auto sent = plan.commands(route, t0 + 1000ms);
    ASSERT_EQ(sent.size(), 1u);
    EXPECT_EQ(sent[0].verb, "SUNSUBSCRIBE");
    EXPECT_FALSE(plan.confirmed_now("ch"));
}

TEST(DirectGrant, AStandingSubscriptionIsJoinedFirstSoTheFirstAttemptTakesAPlace) {
    ScriptedAcquire s(plan());
    s.subscription(true).reply(refused_at(3)).grant_after(2ms, 4);
    const auto finish = s.run(false, true);
    EXPECT_EQ(s.log(), (Log{"join", "attempt", "wait", "granted", "finish acquired"}));
    EXPECT_EQ(s.loop().attempts(), 1u);
    EXPECT_TRUE(finish.direct);
}

}  // namespace
}  // namespace fencelock::test_support
