// The keeper's watch on a Redis server's wall clock (lock/server_clock_watch.hpp): a forward
// step beyond the round trips and the drift allowed is reported; drift within the factor, a
// step back, and a new connection are not.
#include <gtest/gtest.h>

#include "lease/server_clock_watch.hpp"

namespace fencelock::detail {
namespace {

using namespace std::chrono_literals;
using std::chrono::microseconds;
const ServerClockWatch::time t0{std::chrono::seconds(500)};
const microseconds wall0{1'796'000'000'000'000};
constexpr double drift = 0.01;

ServerClockWatch::Reading at(std::chrono::milliseconds steady, microseconds wall, std::int64_t id = 7,
                             std::chrono::milliseconds rtt = 1ms) {
    return {t0 + steady, t0 + steady + rtt, wall, id};
}

TEST(ServerClockWatch, AForwardStepIsReportedWithItsSize) {
    ServerClockWatch w(drift);
    EXPECT_FALSE(w.observe(at(0ms, wall0)));
    EXPECT_FALSE(w.observe(at(1000ms, wall0 + 1000ms)));
    const auto step = w.observe(at(2000ms, wall0 + 2000ms + 120s));
    ASSERT_TRUE(step);
    EXPECT_GT(*step, 119s);
    EXPECT_LT(*step, 121s);
    EXPECT_FALSE(w.observe(at(3000ms, wall0 + 3000ms + 120s))) << "counted from the reading after the step";
}

TEST(ServerClockWatch, RoundTripsAndDriftWithinTheFactorAreNoStep) {
    ServerClockWatch w(drift);
    EXPECT_FALSE(w.observe(at(0ms, wall0, 7, 50ms)));
    // Each reply may have been made anywhere in its round trip: from the first's send to the
    // second's reply is 1050 ms of steady time, so 1045 ms of server time is no step.
    EXPECT_FALSE(w.observe(at(1000ms, wall0 + 1045ms, 7, 50ms)));
    // This machine's wall clock ran 0.5 % fast: for hours, reading after reading.
    ServerClockWatch fast(drift);
    for (int i = 0; i <= 10'000; ++i) EXPECT_FALSE(fast.observe(at(i * 1000ms, wall0 + i * 1005ms))) << "reading " << i;
    // More than the factor allows in one interval is a step, however small.
    EXPECT_TRUE(fast.observe(at(10'001'000ms, wall0 + 10'000 * 1005ms + 1030ms)));
}

TEST(ServerClockWatch, AStepBackIsNotReported) {
    ServerClockWatch w(drift);
    EXPECT_FALSE(w.observe(at(0ms, wall0)));
    EXPECT_FALSE(w.observe(at(1000ms, wall0 - 60s)));
    EXPECT_FALSE(w.observe(at(2000ms, wall0 - 59s)));
}

TEST(ServerClockWatch, AnotherConnectionStartsAfresh) {
    ServerClockWatch w(drift);
    EXPECT_FALSE(w.observe(at(0ms, wall0, 7)));
    EXPECT_FALSE(w.observe(at(1000ms, wall0 + 90s, 8))) << "another server after a failover has its own clock";
    EXPECT_FALSE(w.observe(at(2000ms, wall0 + 91s, 8)));
}

}  // namespace
}  // namespace fencelock::detail
