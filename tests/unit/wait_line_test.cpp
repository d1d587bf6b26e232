#include "lease/wait_line.hpp"

#include <gtest/gtest.h>

namespace fencelock::detail {
namespace {

TEST(WaitLine, ReleasesWakeWaitersOneAtATimeInArrivalOrder) {
    WaitLine line;
    const auto a = line.join();
    const auto b = line.join();
    const auto c = line.join();
    EXPECT_EQ(line.wake_next(), a);
    EXPECT_EQ(line.wake_next(), b);  // a is still awake: the second release goes to b
    EXPECT_TRUE(line.take_wake(a));
    EXPECT_FALSE(line.take_wake(a));  // consumed
    EXPECT_FALSE(line.take_wake(c));
    EXPECT_EQ(line.wake_next(), a);  // a went back to sleep at the head: it is first again
}

TEST(WaitLine, NoWaiterNoWake) {
    WaitLine line;
    EXPECT_EQ(line.wake_next(), std::nullopt);
    const auto a = line.join();
    EXPECT_EQ(line.wake_next(), a);
    EXPECT_EQ(line.wake_next(), std::nullopt);  // everyone is already awake
}

TEST(WaitLine, LeavingHandsTheHeadToTheNext) {
    WaitLine line;
    const auto a = line.join();
    const auto b = line.join();
    EXPECT_EQ(line.ahead(b), 1u);
    line.leave(a);
    EXPECT_EQ(line.ahead(b), 0u);
    EXPECT_EQ(line.wake_next(), b);
    line.leave(a);  // twice is harmless
    EXPECT_EQ(line.size(), 1u);
    line.leave(b);
    EXPECT_TRUE(line.empty());
    EXPECT_FALSE(line.take_wake(b));
}

TEST(WaitLine, WakeAllWakesEveryone) {
    WaitLine line;
    const auto a = line.join();
    const auto b = line.join();
    line.wake_all();
    EXPECT_TRUE(line.take_wake(a));
    EXPECT_TRUE(line.take_wake(b));
    EXPECT_EQ(line.wake_next(), a);
}

TEST(WaitLine, AReleaseNamingAWaiterWakesOnlyThatOne) {
    WaitLine line;
    const auto a = line.join("owner-a");
    const auto b = line.join("owner-b");
    EXPECT_EQ(line.wake("owner-b"), b);
    EXPECT_EQ(line.wake("owner-b"), std::nullopt);    // already awake
    EXPECT_EQ(line.wake("elsewhere"), std::nullopt);  // a waiter of another process
    EXPECT_FALSE(line.take_wake(a));
    EXPECT_TRUE(line.take_wake(b));
}

TEST(WaitLine, TicketsAreNeverReused) {
    WaitLine line;
    const auto a = line.join();
    line.leave(a);
    const auto b = line.join();
    EXPECT_NE(a, b);
    EXPECT_FALSE(line.take_wake(a));
}

TEST(WaitLine, AReleaseThatWasNotMineGoesToTheNextBehindMe) {
    WaitLine line;
    const auto a = line.join();
    const auto b = line.join();
    const auto c = line.join();
    ASSERT_EQ(line.wake_next(), a);
    ASSERT_TRUE(line.take_wake(a));
    EXPECT_EQ(line.wake_after(a), b);
    EXPECT_EQ(line.wake_after(a), c);  // b is awake already
    EXPECT_EQ(line.wake_after(a), std::nullopt);
    EXPECT_EQ(line.wake_after(c), std::nullopt);
    EXPECT_EQ(line.wake_after(999), std::nullopt);
}

// A release vouches for the waiter it names (lib/handoff.lua grants it the whole lease): only
// one that takes direct grants, holds no grant yet and waits longer than the release can take.
TEST(WaitLine, TheSuccessorIsTheFirstWaiterThatTakesGrantsAndStillWaitsLongEnough) {
    using namespace std::chrono_literals;
    const auto now = std::chrono::steady_clock::now();
    WaitLine line;
    line.join("plain");                                           // takes no direct grants
    line.join("leaving", SuccessorTerms{30s, 60s, now + 500ms});  // gives up within the margin
    line.join("granted", SuccessorTerms{30s, 60s, now + 60s});
    line.join("next", SuccessorTerms{20s, 40s, now + 60s});
    line.join("last", SuccessorTerms{30s, 60s, now + 60s});
    ASSERT_TRUE(line.grant("granted", DirectGrant{.fence = FencingToken(7), .ttl = 30s}));
    const auto named = line.successor(now, 1s);
    ASSERT_TRUE(named);
    EXPECT_EQ(named->tag, "next");
    EXPECT_EQ(named->terms.lease, 20s);
    EXPECT_EQ(named->terms.max_hold, 40s);
    EXPECT_EQ(line.successor(now + 59500ms, 1s), std::nullopt) << "every waiter gives up within the margin";
    EXPECT_EQ(WaitLine{}.successor(now, 1s), std::nullopt);
}

}  // namespace
}  // namespace fencelock::detail
