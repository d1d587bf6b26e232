// The keeper's clock watch on one server whose wall clock steps forward (the clock shim,
// tests/support/clock_offset.hpp). Redis expires keys by its wall clock, so the step ends every
// lease there at once; the keeper must say so before the longest lease's own renewal would.
#include "integration/lock_fixture.hpp"
#include "integration/loss_recorder.hpp"
#include "support/clock_offset.hpp"

namespace fencelock::test_support {
namespace {

using namespace std::chrono_literals;

class KeeperClockTest : public LockTest {
protected:
    void SetUp() override { redis = std::make_unique<local::RedisServer>(std::vector<std::string>{}, clock.env()); }
    ClockOffset clock;
};

// Probing every 10 min, only a renewal's reply can bring the step to light: the short lease's
// renewal (every ~100 ms) replies not_owner with the server's time, 120 s ahead of the last
// reading, and the probe that calls for finds the step and loses the long lease too, as
// clock_step, long before that lease's own renewal (20 s in) would have found it gone.
TEST_F(KeeperClockTest, ARenewalsReplyAheadOfTheLastReadingLosesEveryLeaseOnThatServerAtOnce) {
    ClientOptions o;
    o.clock_probe_interval = 10min;
    auto c = client(o);
    LossRecorder brief_loss, long_loss;
    auto brief = c.hold(resource("brief"), {.lease = 300ms}, brief_loss.options());
    auto kept = c.hold(resource("kept"), {.lease = 60s}, long_loss.options());
    ASSERT_TRUE(brief && brief->acquired() && kept && kept->acquired());
    // The lane reads the clock before its first batch: a baseline exists once one batch went.
    ASSERT_TRUE(eventually([&] { return c.keeper_stats().renewals_confirmed >= 2; }, 10s));
    EXPECT_EQ(c.keeper_stats().clock_probes_on_renewal, 0u) << "no step yet";

    clock.step(120s);
    ASSERT_TRUE(eventually([&] { return long_loss.reason().has_value(); }, 15s))
        << "the long lease was not lost: only its own renewal would find it gone";
    EXPECT_EQ(long_loss.reason(), LossReason::clock_step);
    EXPECT_GE(c.keeper_stats().clock_probes_on_renewal, 1u);
    EXPECT_FALSE(kept->lease->valid());
}

}  // namespace
}  // namespace fencelock::test_support
