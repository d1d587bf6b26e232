// safe_until: the local deadline is send time + ttl * (1 - drift), never later than send + ttl.
#include "lease/safe_until.hpp"

#include <gtest/gtest.h>

#include <chrono>

namespace {

using fencelock::steady_time;
using fencelock::detail::safe_until;
using namespace std::chrono_literals;

const steady_time sent = steady_time{} + 123'456'789us;

TEST(SafeUntil, NoDriftGivesExactlyTheTtl) {
    EXPECT_EQ(safe_until(sent, 30'000ms, 0.0), sent + 30'000ms);
    EXPECT_EQ(safe_until(sent, 1ms, 0.0), sent + 1ms);
    EXPECT_EQ(safe_until(sent, 0ms, 0.0), sent);
}

// Microseconds between `sent` and a deadline, as a double for EXPECT_NEAR.
double micros_after_send(steady_time deadline) {
    return std::chrono::duration<double, std::micro>(deadline - sent).count();
}

TEST(SafeUntil, DriftShortensTheLease) {
    // 30 s * (1 - 0.01) = 29.7 s; allow 1 µs for floating point.
    EXPECT_NEAR(micros_after_send(safe_until(sent, 30'000ms, 0.01)), 29'700'000.0, 1.0);
    // 1 ms * 0.99 = 990 µs: sub-millisecond precision is kept.
    EXPECT_NEAR(micros_after_send(safe_until(sent, 1ms, 0.01)), 990.0, 1.0);
    EXPECT_NEAR(micros_after_send(safe_until(sent, 10'000ms, 0.25)), 7'500'000.0, 1.0);
}

TEST(SafeUntil, CountsFromTheSendTime) {
    const auto later = sent + 5s;
    EXPECT_EQ(safe_until(later, 10s, 0.1) - later, safe_until(sent, 10s, 0.1) - sent);
}

TEST(SafeUntil, NeverLaterThanSendPlusTtl) {
    for (auto ttl : {1ms, 10ms, 999ms, 30'000ms, 3'600'000ms})
        for (double drift : {0.0, 0.001, 0.01, 0.1, 0.49}) {
            EXPECT_LE(safe_until(sent, ttl, drift), sent + ttl) << ttl.count() << "ms drift " << drift;
            EXPECT_GE(safe_until(sent, ttl, drift), sent) << ttl.count() << "ms drift " << drift;
        }
}

TEST(SafeUntil, MoreDriftIsEarlier) {
    EXPECT_LT(safe_until(sent, 30s, 0.2), safe_until(sent, 30s, 0.1));
    EXPECT_LT(safe_until(sent, 30s, 0.1), safe_until(sent, 30s, 0.0));
}

}  // namespace
