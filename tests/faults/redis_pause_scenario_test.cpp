// Redis frozen (SIGSTOP on the server) while a kept lease is held.
//
// Half a lease: the keeper's renewals time out during the pause and are retried; the lease is
// not lost, and the holder's write goes through. Three leases: the keeper declares the lease
// lost when safe_until passes (the stop token fires while Redis is still frozen), Redis
// expires the key on its own clock, a new holder takes over after the resume. A write the old
// holder started before the pause must not be accepted with fencing on. The unfenced run
// (negative control) accepts it.
#include "faults/scenario.hpp"

namespace fencelock::faults {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using test_support::eventually;

std::int64_t ms_since(Clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t).count();
}

using RedisPaused = ScenarioTest;

TEST_P(RedisPaused, KeeperRidesOutHalfALeaseAndLosesThreeLeasesSafely) {
    auto c = client({.connect_timeout = 100ms, .command_timeout = 100ms});
    auto other = client({.connect_timeout = 100ms, .command_timeout = 100ms});
    auto a_rec = recorder("A"), b_rec = recorder("B");
    RmwWorker a(*a_rec, *target), b(*b_rec, *target);
    const KeepOptions keep{.retry_delay = 50ms};

    // ---- phase 1: Redis frozen for half the lease ---------------------------------------
    const std::string r1 = "paused:half";
    constexpr auto lease1 = 1200ms;
    auto held1 = c.hold(res(r1), {.lease = lease1}, keep);
    ASSERT_TRUE(held1 && held1->acquired());
    HeldLease& l1 = *held1->lease;
    const auto start1 = now_ns();
    // Freeze right after a confirmed renewal, so the pause is measured against a full lease.
    ASSERT_TRUE(eventually([&] { return l1.renewals() >= 1; }, 5s));
    redis->pause();
    const auto paused1 = Clock::now();
    ASSERT_TRUE(eventually([&] { return Clock::now() - paused1 >= lease1 / 2; }));  // the fault itself
    redis->resume();
    const auto resumed1 = Clock::now();
    const auto renewals_at_resume = l1.renewals();
    ASSERT_TRUE(eventually([&] { return l1.renewals() > renewals_at_resume || l1.loss(); }, 5s));
    const auto confirmed_after = ms_since(resumed1);
    const bool lost1 = l1.loss().has_value();
    EXPECT_FALSE(lost1) << "lost after a pause of half the lease: " << to_string(*l1.loss());
    const std::string base1 = a.read(r1, l1.fence().value());
    if (l1.valid()) a_rec->hold(r1, l1.fence().value(), start1, now_ns());
    EXPECT_EQ(a.write(r1, base1, "A1", l1.fence().value()), TargetStatus::applied);
    EXPECT_TRUE(l1.release());

    // ---- phase 2: Redis frozen for three leases ------------------------------------------
    const std::string r2 = "paused:3x";
    constexpr auto lease2 = 300ms;
    auto held2 = c.hold(res(r2), {.lease = lease2}, keep);
    ASSERT_TRUE(held2 && held2->acquired());
    HeldLease& l2 = *held2->lease;
    const auto start2 = now_ns();
    ASSERT_TRUE(eventually([&] { return l2.renewals() >= 1; }, 5s));
    const std::string base2 = a.read(r2, l2.fence().value());
    ASSERT_TRUE(l2.valid());
    a_rec->hold(r2, l2.fence().value(), start2, now_ns());  // A's last validity check

    redis->pause();
    const auto paused2 = Clock::now();
    ASSERT_TRUE(eventually([&] { return l2.stop_token().stop_requested(); }, 5s)) << "the keeper never gave up";
    const auto loss_noticed = ms_since(paused2);
    EXPECT_EQ(l2.loss(), LossReason::expired);
    EXPECT_FALSE(l2.valid());
    ASSERT_TRUE(eventually([&] { return Clock::now() - paused2 >= 3 * lease2; }));  // the fault itself
    redis->resume();
    const auto resumed2 = Clock::now();
    ASSERT_TRUE(eventually([&] { return lock_gone(other, r2); }, 5s)) << "Redis kept the lease past its TTL";

    auto lease_b = record_acquire(*b_rec, r2, [&] { return other.acquire(res(r2), {.lease = 5s, .wait = 2s}); });
    ASSERT_TRUE(lease_b);
    const auto takeover_ms = ms_since(resumed2);
    const auto b_start = now_ns();
    const std::string b_base = b.read(r2, lease_b->fence.value());
    ASSERT_TRUE(still_valid(*lease_b));
    b_rec->hold(r2, lease_b->fence.value(), b_start, now_ns());
    EXPECT_EQ(b.write(r2, b_base, "B", lease_b->fence.value()), TargetStatus::applied);
    (void)other.release(res(r2), lease_b->owner);

    // A's write, begun before the pause, lands after the loss.
    const auto late = a.write(r2, base2, "A2", l2.fence().value());
    if (fencing()) {
        EXPECT_EQ(late, TargetStatus::stale) << "a write after the lease was lost was accepted";
    }

    const Report report = check_history();
    expect_verdict(report);
    expect_linearizability_caught();
    const Report half = check(only(history(), r1));
    EXPECT_EQ(half.total(), 0u) << "nothing may go wrong while the keeper rides out a short pause";
    const Report three = check(only(history(), r2));
    summary("redis_paused_half_lease")
        .add("protection", "keeper retries (no takeover possible: the negative control is the 3x phase)")
        .report(half)
        .linearizability(lin.only(r1))
        .add("lease_ms", lease1.count())
        .add("paused_ms", std::chrono::duration_cast<std::chrono::milliseconds>(resumed1 - paused1).count())
        .flag("lease_lost", lost1)
        .add("renewal_confirmed_after_resume_ms", confirmed_after)
        .print();
    summary("redis_paused_3x_lease")
        .add("protection", "target fence check")
        .report(three)
        .linearizability(lin.only(r2))
        .add("lease_ms", lease2.count())
        .add("paused_ms", std::chrono::duration_cast<std::chrono::milliseconds>(resumed2 - paused2).count())
        .add("loss_noticed_after_ms", loss_noticed)
        .add("takeover_after_resume_ms", takeover_ms)
        .add("late_write", std::string(to_string(late)))
        .print();
}

INSTANTIATE_TEST_SUITE_P(Faults, RedisPaused, ::testing::ValuesIn(no_postgres()), mode_name);

}  // namespace
}  // namespace fencelock::faults
