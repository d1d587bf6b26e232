// When run and worker signal a command whose lease may end (posix/stop_schedule.hpp): SIGKILL
// never after the lease's safe-until, SIGTERM a grace before it, and a grace that cannot fit a
// healthy lease is refused.
#include <gtest/gtest.h>

#include "posix/stop_schedule.hpp"

namespace fencelock::cli {
namespace {

using namespace std::chrono_literals;
using Action = StopSchedule::Action;
const StopSchedule::time t0{std::chrono::seconds(1000)};

TEST(StopSchedule, RenewalsFailingBringSigtermAGraceBeforeSafeUntilAndSigkillAtIt) {
    StopSchedule s(1s);
    s.lease_until(t0 + 3s);
    EXPECT_EQ(s.due(t0), Action::none);
    EXPECT_EQ(s.next(), t0 + 2s);
    EXPECT_EQ(s.due(t0 + 1999ms), Action::none);
    EXPECT_EQ(s.due(t0 + 2s), Action::term);
    EXPECT_EQ(s.due(t0 + 2s), Action::none) << "SIGTERM once";
    EXPECT_EQ(s.next(), t0 + 3s);
    EXPECT_EQ(s.due(t0 + 3s), Action::kill);
    EXPECT_EQ(s.due(t0 + 4s), Action::none) << "SIGKILL once";
    EXPECT_FALSE(s.next());
}

TEST(StopSchedule, ARenewalMovesTheStopOn) {
    StopSchedule s(1s);
    s.lease_until(t0 + 3s);
    s.lease_until(t0 + 5s);
    EXPECT_EQ(s.due(t0 + 2500ms), Action::none);
    EXPECT_EQ(s.next(), t0 + 4s);
    EXPECT_FALSE(s.stopping());
}

TEST(StopSchedule, ALossStopsAtOnceAndTheKillComesByTheGraceOrSafeUntilWhicheverIsFirst) {
    StopSchedule early(1s);
    early.lease_until(t0 + 10s);
    early.stop_now(t0);
    EXPECT_EQ(early.due(t0), Action::term);
    EXPECT_EQ(early.next(), t0 + 1s) << "the grace ends first";

    StopSchedule late(5s);
    late.lease_until(t0 + 2s);
    late.stop_now(t0);
    EXPECT_EQ(late.due(t0), Action::term);
    EXPECT_EQ(late.next(), t0 + 2s) << "never past the moment the lease can have ended";
    EXPECT_EQ(late.due(t0 + 2s), Action::kill);
}

TEST(StopSchedule, AWakeupPastSafeUntilSendsBothInOrder) {
    StopSchedule s(1s);
    s.lease_until(t0 + 3s);
    EXPECT_EQ(s.due(t0 + 4s), Action::term);
    EXPECT_EQ(s.due(t0 + 4s), Action::kill);
    EXPECT_TRUE(s.killed());
}

TEST(StopSchedule, WithoutALeaseOnlyAStopSignals) {
    StopSchedule s(2s);
    EXPECT_FALSE(s.next());
    s.stop_now(t0);
    EXPECT_EQ(s.due(t0), Action::term);
    EXPECT_EQ(s.next(), t0 + 2s);
}

TEST(StopSchedule, TheGraceAHealthyLeaseLeaves) {
    // trusted (lease x 0.99) - 1.5 x the renewal interval (lease / 3).
    EXPECT_EQ(max_stop_grace(30s, 10s, 0.01), 14700ms);
    EXPECT_EQ(max_stop_grace(5s, 1666ms, 0.01), 2451ms);
    EXPECT_EQ(max_stop_grace(3s, 1s, 0.01), 1470ms);
    EXPECT_EQ(max_stop_grace(1s, 333ms, 0.99), 0ms) << "nothing fits";
}

}  // namespace
}  // namespace fencelock::cli
