// The keeper's renewal arithmetic with a fake clock: no threads, no sleeps.
#include <gtest/gtest.h>

#include "lease/renewal.hpp"

namespace fencelock::detail {
namespace {

using namespace std::chrono_literals;
const steady_time t0{std::chrono::seconds(1000)};
const RenewalPolicy policy{.interval = 1000ms, .retry_delay = 100ms, .drift_factor = 0.01};

TEST(Renewal, ConfirmationCountsFromTheSendTimeMinusDrift) {
    const auto times = after_confirmation(t0, 3000ms, policy);
    EXPECT_EQ(times.safe_until, t0 + 2970ms);
    EXPECT_EQ(times.next_renewal, t0 + 1000ms);
}

TEST(Renewal, ZeroDriftTrustsTheWholeTtl) {
    const auto times = after_confirmation(t0, 3000ms, {.interval = 1000ms, .retry_delay = 100ms, .drift_factor = 0});
    EXPECT_EQ(times.safe_until, t0 + 3000ms);
}

TEST(Renewal, RetryComesSoonAndAlwaysBeforeTheDeadline) {
    EXPECT_EQ(retry_at(t0, t0 + 10s, policy), t0 + 100ms);
    // Less than two retry delays left: retry at half the remaining window.
    EXPECT_EQ(retry_at(t0, t0 + 150ms, policy), t0 + 75ms);
    EXPECT_LT(retry_at(t0, t0 + 2ms, policy), t0 + 2ms);
    // Past the deadline there is nothing to wait for.
    EXPECT_EQ(retry_at(t0 + 5s, t0 + 1s, policy), t0 + 5s);
}

TEST(Renewal, DueUpToAQuarterIntervalEarly) {
    const auto next = t0 + 1000ms;
    EXPECT_FALSE(renewal_due(t0 + 749ms, next, 1000ms));
    EXPECT_TRUE(renewal_due(t0 + 750ms, next, 1000ms));
    EXPECT_TRUE(renewal_due(t0 + 2000ms, next, 1000ms));
}

TEST(Renewal, ARetryWaitsItsWholeDelay) {
    // With a 10 s lease's interval (3.3 s) a quarter interval early would send a retry planned
    // 100 ms ahead at once: a Redis that refuses fast would be asked again in a tight loop.
    const RenewalPolicy policy{.interval = 3333ms, .retry_delay = 100ms, .drift_factor = 0.01};
    const auto retry = retry_at(t0, t0 + 10s, policy);
    EXPECT_FALSE(renewal_due(t0, retry, policy.interval, RenewalKind::retry));
    EXPECT_FALSE(renewal_due(t0 + 99ms, retry, policy.interval, RenewalKind::retry));
    EXPECT_TRUE(renewal_due(t0 + 100ms, retry, policy.interval, RenewalKind::retry));
    EXPECT_TRUE(renewal_due(t0, retry, policy.interval, RenewalKind::scheduled));
}

TEST(Renewal, ExpiresExactlyAtSafeUntil) {
    EXPECT_FALSE(expired(t0 + 999ms, t0 + 1s));
    EXPECT_TRUE(expired(t0 + 1s, t0 + 1s));
}

TEST(Renewal, DefaultIntervalIsAThirdOfTheLease) {
    EXPECT_EQ(default_renew_interval(30s), 10s);
    EXPECT_EQ(default_renew_interval(2ms), 1ms);
}

// A lease renewed on schedule with every renewal confirmed after `rtt` stays valid forever;
// one whose renewals all fail is lost exactly at its first safe_until.
TEST(Renewal, SimulatedScheduleKeepsOrLosesTheLease) {
    auto times = after_confirmation(t0, 3000ms, policy);
    steady_time now = t0;
    for (int i = 0; i < 100; ++i) {
        now = times.next_renewal;
        ASSERT_FALSE(expired(now, times.safe_until));
        times = after_confirmation(now, 3000ms, policy);  // confirmed
        now += 5ms;                                       // reply arrives
        ASSERT_FALSE(expired(now, times.safe_until));
    }
    const auto deadline = times.safe_until;
    now = times.next_renewal;
    int attempts = 0;
    while (!expired(now, times.safe_until)) {
        now = retry_at(now, times.safe_until, policy);  // each attempt fails
        ++attempts;
        ASSERT_LT(attempts, 1000);
    }
    EXPECT_GE(now, deadline);
    EXPECT_GE(attempts, 10);
}

}  // namespace
}  // namespace fencelock::detail
