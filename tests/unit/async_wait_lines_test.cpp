#include "lease/async_wait_lines.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

// The async client's local lines, without a loop: every call here is what the loop thread makes.
// Deadlines and lease ends sit hours from now, so no reading of the clock can tip a result.
namespace fencelock::detail {
namespace {

using namespace std::chrono_literals;
using clock = AsyncWaitLines::clock;

/// Records how the lines reached it; `on_grant` runs inside granted() (a waiter may act there).
struct Waiter : AsyncLineWaiter {
    explicit Waiter(std::string name, std::vector<std::string>* log) : name(std::move(name)), log(log) {}
    void granted(const DirectGrant& g) override {
        log->push_back(name + " granted " + std::to_string(g.fence.value()));
        if (on_grant) on_grant();
    }
    void woken() override { log->push_back(name + " woken"); }
    void named() override { log->push_back(name + " named"); }
    std::string name;
    std::vector<std::string>* log;
    std::function<void()> on_grant;
};

DirectGrant grant_of(std::uint64_t fence) { return {.fence = FencingToken{fence}, .ttl = 5s}; }

class AsyncWaitLinesTest : public ::testing::Test {
protected:
    std::shared_ptr<Waiter> waiter(std::string name) { return std::make_shared<Waiter>(std::move(name), &log); }
    AsyncWaitLines::Ticket join(const std::string& channel, const std::shared_ptr<Waiter>& w, clock::time_point until,
                                std::size_t* ahead_out = nullptr) {
        std::size_t ahead = 99;
        const auto t = lines.join(channel, w->name, 1s, 0ms, until, w, ahead);
        if (ahead_out) *ahead_out = ahead;
        return t;
    }

    AsyncWaitLines lines;
    std::vector<std::string> log;
    const clock::time_point now = clock::now();
    const clock::time_point later = now + 1h;
};

TEST_F(AsyncWaitLinesTest, JoinCountsThoseAheadAndLeaveEmptiesTheLine) {
    auto a = waiter("a"), b = waiter("b");
    std::size_t ahead = 0;
    EXPECT_FALSE(lines.has_waiters("ch"));
    const auto ta = join("ch", a, later, &ahead);
    EXPECT_EQ(ahead, 0u);
    const auto tb = join("ch", b, later, &ahead);
    EXPECT_EQ(ahead, 1u);
    EXPECT_NE(ta, tb);
    EXPECT_TRUE(lines.has_waiters("ch"));
    EXPECT_FALSE(lines.has_waiters("other"));
    lines.leave("ch", ta, now);
    EXPECT_TRUE(lines.has_waiters("ch"));
    lines.leave("ch", ta, now);  // twice, and unknown tickets or channels, are no-ops
    lines.leave("nowhere", tb, now);
    lines.leave("ch", tb + 100, now);
    EXPECT_TRUE(lines.has_waiters("ch"));
    lines.leave("ch", tb, now);
    EXPECT_FALSE(lines.has_waiters("ch"));
    EXPECT_TRUE(log.empty());  // joining and leaving call nobody back
}

TEST_F(AsyncWaitLinesTest, AResourceStaysHotForTheLingerAfterItsLastWaiterLeft) {
    EXPECT_FALSE(lines.waited_lately("ch", now));
    auto a = waiter("a");
    const auto t = join("ch", a, later);
    EXPECT_TRUE(lines.waited_lately("ch", now + 1h));  // someone waits: hot, however long
    lines.leave("ch", t, now);
    EXPECT_TRUE(lines.waited_lately("ch", now));
    EXPECT_TRUE(lines.waited_lately("ch", now + AsyncWaitLines::linger - 1ms));
    EXPECT_FALSE(lines.waited_lately("ch", now + AsyncWaitLines::linger));
    EXPECT_FALSE(lines.waited_lately("other", now));
}

TEST_F(AsyncWaitLinesTest, AnIdleLineIsForgottenAfterTheLinger) {
    auto a = waiter("a"), b = waiter("b");
    const auto ta = join("ch", a, later);
    lines.leave("ch", ta, now);
    // Another channel's leave after the linger purges "ch": it is cold again even at a time
    // within the linger of its last leave, because its line is gone.
    const auto tb = join("other", b, later);
    lines.leave("other", tb, now + AsyncWaitLines::linger);
    EXPECT_FALSE(lines.waited_lately("ch", now));
    EXPECT_TRUE(lines.waited_lately("other", now + AsyncWaitLines::linger));
}

TEST_F(AsyncWaitLinesTest, AGrantGoesToTheWaiterWithThatOwnerNotTheFront) {
    auto a = waiter("a"), b = waiter("b"), c = waiter("c");
    join("ch", a, later);
    join("ch", b, later);
    join("ch", c, later);
    EXPECT_TRUE(lines.grant("ch", "b", grant_of(7)));
    EXPECT_EQ(log, std::vector<std::string>{"b granted 7"});
    EXPECT_FALSE(lines.grant("ch", "nobody", grant_of(8)));
    EXPECT_FALSE(lines.grant("other", "a", grant_of(9)));  // lines are per channel
    EXPECT_EQ(log.size(), 1u);
}

TEST_F(AsyncWaitLinesTest, AGrantToAWaiterThatLeftOrIsGoneReachesNobody) {
    auto a = waiter("a"), b = waiter("b");
    const auto ta = join("ch", a, later);
    join("ch", b, later);
    lines.leave("ch", ta, now);
    EXPECT_FALSE(lines.grant("ch", "a", grant_of(3)));  // left: the caller hands it elsewhere
    b.reset();                                          // its acquisition ended without leaving
    EXPECT_FALSE(lines.grant("ch", "b", grant_of(4)));
    EXPECT_TRUE(log.empty());
}

TEST_F(AsyncWaitLinesTest, AGrantedWaiterMayLeaveTheLineFromInsideTheCallback) {
    auto a = waiter("a"), b = waiter("b");
    const auto ta = join("ch", a, later);
    join("ch", b, later);
    a->on_grant = [&] { lines.leave("ch", ta, now); };
    EXPECT_TRUE(lines.grant("ch", "a", grant_of(5)));
    EXPECT_TRUE(lines.has_waiters("ch"));
    const auto next = lines.name_successor("ch", now, 1s);
    ASSERT_TRUE(next);
    EXPECT_EQ(next->owner, "b");
    EXPECT_EQ(log, (std::vector<std::string>{"a granted 5", "b named"}));
}

TEST_F(AsyncWaitLinesTest, TheSuccessorIsTheFirstWaiterThatStillWaitsPastTheMargin) {
    auto soon = waiter("soon"), a = waiter("a"), b = waiter("b");
    std::size_t ahead = 0;
    join("ch", soon, now + 500ms);  // gives up before a release on the wire could reach it
    lines.join("ch", "a", 2s, 30s, later, a, ahead);
    join("ch", b, later);
    const auto next = lines.name_successor("ch", now, 1s);
    ASSERT_TRUE(next);
    EXPECT_EQ(next->owner, "a");
    EXPECT_EQ(next->lease, 2s);
    EXPECT_EQ(next->max_hold, 30s);
    EXPECT_EQ(log, std::vector<std::string>{"a named"});
    // Exactly the margin left still counts; less does not.
    EXPECT_EQ(lines.name_successor("ch", now + 500ms - 1s, 1s)->owner, "soon");
    EXPECT_EQ(lines.name_successor("ch", now + 500ms - 1s + 1ns, 1s)->owner, "a");
}

TEST_F(AsyncWaitLinesTest, NobodyIsNamedWhenEveryWaiterGivesUpWithinTheMargin) {
    auto a = waiter("a");
    EXPECT_EQ(lines.name_successor("ch", now, 1s), std::nullopt);  // no line at all
    join("ch", a, now + 100ms);
    EXPECT_EQ(lines.name_successor("ch", now, 1s), std::nullopt);
    EXPECT_TRUE(log.empty());
}

TEST_F(AsyncWaitLinesTest, AWaiterThatIsGoneIsStillNamedButNotCalled) {
    // The line keeps its place until it leaves: a release names it, the grant then finds
    // nobody and the caller hands the lock on (on_foreign_grant).
    auto a = waiter("a");
    join("ch", a, later);
    a.reset();
    const auto next = lines.name_successor("ch", now, 1s);
    ASSERT_TRUE(next);
    EXPECT_EQ(next->owner, "a");
    EXPECT_FALSE(lines.grant("ch", "a", grant_of(1)));
    EXPECT_TRUE(log.empty());
}

TEST_F(AsyncWaitLinesTest, WakeAfterHandsTheWakeUpToTheNextInLineOnly) {
    auto a = waiter("a"), b = waiter("b"), c = waiter("c");
    const auto ta = join("ch", a, later);
    const auto tb = join("ch", b, later);
    const auto tc = join("ch", c, later);
    lines.wake_after("ch", ta);
    EXPECT_EQ(log, std::vector<std::string>{"b woken"});
    lines.wake_after("ch", tc);  // nobody behind the last
    lines.wake_after("ch", 12345);
    lines.wake_after("other", tb);
    EXPECT_EQ(log.size(), 1u);
    lines.leave("ch", tb, now);
    lines.wake_after("ch", ta);  // b left: c is next
    EXPECT_EQ(log.back(), "c woken");
}

TEST_F(AsyncWaitLinesTest, HeldLeasesAreKnownByFenceUntilTheirRelease) {
    EXPECT_FALSE(lines.held_here("ch", 5));
    EXPECT_EQ(lines.held_until("ch"), std::nullopt);
    lines.hold("ch", "me", 5, later);
    EXPECT_TRUE(lines.held_here("ch", 5));
    EXPECT_FALSE(lines.held_here("ch", 4));  // an older holder's lease
    EXPECT_FALSE(lines.held_here("other", 5));
    EXPECT_EQ(lines.held_until("ch"), later);
    lines.release("ch", "someone else");
    EXPECT_TRUE(lines.held_here("ch", 5));
    lines.release("ch", "me");
    EXPECT_FALSE(lines.held_here("ch", 5));
    EXPECT_EQ(lines.held_until("ch"), std::nullopt);
}

TEST_F(AsyncWaitLinesTest, ARefusalThatSawANewerFenceRetiresThisClientsOlderLease) {
    // Another holder's fence 6 means fence 5's lease is over, released or not.
    lines.hold("ch", "me", 5, later);
    EXPECT_FALSE(lines.held_here("ch", 6));
    EXPECT_FALSE(lines.held_here("ch", 5));
    EXPECT_EQ(lines.held_until("ch"), std::nullopt);
}

TEST_F(AsyncWaitLinesTest, ALeaseWhoseSafeUntilPassedIsNotHeld) {
    lines.hold("ch", "me", 5, now - 1s);
    EXPECT_FALSE(lines.held_here("ch", 5));
    EXPECT_EQ(lines.held_until("ch"), std::nullopt);
}

TEST_F(AsyncWaitLinesTest, HeldUntilIsTheLatestEndAndANewerFenceRetiresOlderOnes) {
    lines.hold("ch", "old", 5, later);
    lines.hold("ch", "new", 6, later + 1h);
    EXPECT_EQ(lines.held_until("ch"), later + 1h);
    EXPECT_TRUE(lines.held_here("ch", 6));  // a refusal that saw fence 6: fence 5's lease is over
    EXPECT_FALSE(lines.held_here("ch", 5));
    lines.release("ch", "new");
    EXPECT_EQ(lines.held_until("ch"), std::nullopt);  // the old one was forgotten, not kept
}

TEST_F(AsyncWaitLinesTest, AfterAReleaseTheFrontAttemptsOnlyWhenNoLeaseOfThisClientHoldsIt) {
    auto a = waiter("a"), b = waiter("b");
    join("ch", a, later);
    join("ch", b, later);
    lines.hold("ch", "me", 5, later);
    lines.after_release("ch");  // granted to a thread of this client that still holds it
    EXPECT_TRUE(log.empty());
    lines.release("ch", "me");
    lines.after_release("ch");
    EXPECT_EQ(log, std::vector<std::string>{"a woken"});
    lines.after_release("other");
    EXPECT_EQ(log.size(), 1u);
}

TEST_F(AsyncWaitLinesTest, AfterAReleaseAHeldLeasePastItsEndDoesNotKeepTheFrontWaiting) {
    auto a = waiter("a");
    join("ch", a, later);
    lines.hold("ch", "me", 5, now - 1ms);
    lines.after_release("ch");
    EXPECT_EQ(log, std::vector<std::string>{"a woken"});
}

TEST_F(AsyncWaitLinesTest, ChannelsKeepSeparateLinesAndHolds) {
    auto a = waiter("a"), b = waiter("b");
    const auto ta = join("x", a, later);
    const auto tb = join("y", b, later);
    lines.hold("x", "hx", 1, later);
    EXPECT_EQ(lines.name_successor("y", now, 1s)->owner, "b");
    EXPECT_EQ(lines.name_successor("x", now, 1s)->owner, "a");
    EXPECT_EQ(lines.held_until("y"), std::nullopt);
    lines.after_release("y");  // nothing of this client holds y: its front attempts
    lines.after_release("x");  // x is still held
    EXPECT_EQ(log, (std::vector<std::string>{"b named", "a named", "b woken"}));
    lines.leave("x", ta, now);
    EXPECT_FALSE(lines.has_waiters("x"));
    EXPECT_TRUE(lines.has_waiters("y"));
    lines.leave("y", tb, now);
}

}  // namespace
}  // namespace fencelock::detail
