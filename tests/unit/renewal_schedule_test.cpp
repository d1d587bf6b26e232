// The keeper's timetable with made-up times: no threads, no sleeps, no clock.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>

#include "lease/renewal.hpp"
#include "lease/renewal_schedule.hpp"

namespace fencelock::detail {
namespace {

using namespace std::chrono_literals;
using Ids = std::vector<int>;
const steady_time t0{std::chrono::seconds(1000)};
const steady_time never = t0 + 24h;

struct FakeLease {
    int id;
    ScheduleSlot schedule;
};
using Ptr = std::shared_ptr<FakeLease>;

// A schedule of leases named by small numbers, made on first mention.
struct Schedule {
    RenewalSchedule<Ptr> s;
    std::map<int, Ptr> leases;
    const Ptr& operator[](int id) {
        auto& p = leases[id];
        if (!p) p = std::make_shared<FakeLease>(FakeLease{id, {}});
        return p;
    }
    void plan_renewal(int id, steady_time at, steady_time::duration early) { s.plan_renewal((*this)[id], at, early); }
    void set_deadline(int id, steady_time at) { s.set_deadline((*this)[id], at); }
    void forget(int id) { s.forget((*this)[id]); }
    steady_time next_wake(steady_time otherwise) { return s.next_wake(otherwise); }
    std::size_t size() const { return s.size(); }
    bool renewal_planned(int id) { return (*this)[id]->schedule.renewal_planned; }
};

Ids names(const std::vector<Ptr>& got) {
    Ids out;
    for (const auto& p : got) out.push_back(p->id);
    return out;
}

Ids take_due(Schedule& s, steady_time now) {
    std::vector<Ptr> out;
    s.s.take_due(now, out);
    return names(out);
}

Ids take_expired(Schedule& s, steady_time now) {
    std::vector<Ptr> out;
    s.s.take_expired(now, out);
    return names(out);
}

// Equal times come out in no particular order.
Ids sorted(Ids ids) {
    std::sort(ids.begin(), ids.end());
    return ids;
}

TEST(RenewalSchedule, EmptyScheduleWakesAtTheFallback) {
    Schedule s;
    EXPECT_EQ(s.next_wake(never), never);
    EXPECT_TRUE(take_due(s, never).empty());
    EXPECT_TRUE(take_expired(s, never).empty());
    EXPECT_EQ(s.size(), 0u);
}

TEST(RenewalSchedule, WakesAtTheRenewalButTakesItUpToTheEarlyAllowanceBefore) {
    Schedule s;
    s.set_deadline(1, t0 + 3s);
    s.plan_renewal(1, t0 + 1s, 250ms);
    EXPECT_EQ(s.next_wake(never), t0 + 1s) << "wake when it must go, not when it first may";
    EXPECT_TRUE(take_due(s, t0 + 749ms).empty());
    EXPECT_EQ(take_due(s, t0 + 750ms), Ids{1});
    // Taken: due no more, and only its deadline still wakes the timer.
    EXPECT_FALSE(s.renewal_planned(1));
    EXPECT_TRUE(take_due(s, t0 + 2s).empty());
    EXPECT_EQ(s.next_wake(never), t0 + 3s);
    EXPECT_EQ(s.size(), 1u);
}

// The batching the early allowance buys: a wake-up for the first lease sweeps up the others
// due within the allowance, and only them.
TEST(RenewalSchedule, OneWakeUpTakesEveryLeaseDueWithinTheAllowance) {
    Schedule s;
    for (int i = 0; i < 10; ++i) {
        s.set_deadline(i, t0 + 10s);
        s.plan_renewal(i, t0 + 1s + i * 100ms, 400ms);
    }
    const auto wake = s.next_wake(never);
    EXPECT_EQ(wake, t0 + 1s);
    EXPECT_EQ(take_due(s, wake), (Ids{0, 1, 2, 3, 4}));
    EXPECT_EQ(s.next_wake(never), t0 + 1500ms);
}

// With different intervals the lease that may go first is not the one that must go first:
// each order is kept on its own.
TEST(RenewalSchedule, MixedAllowancesKeepBothOrders) {
    Schedule s;
    s.plan_renewal(1, t0 + 100ms, 25ms);   // due from t0 + 75 ms
    s.plan_renewal(2, t0 + 200ms, 250ms);  // due from t0 - 50 ms
    EXPECT_EQ(s.next_wake(never), t0 + 100ms);
    EXPECT_EQ(take_due(s, t0), Ids{2});
    EXPECT_EQ(s.next_wake(never), t0 + 100ms);
    EXPECT_EQ(take_due(s, t0 + 100ms), Ids{1});
    EXPECT_EQ(s.next_wake(never), never);
}

TEST(RenewalSchedule, ReplanningMovesTheRenewal) {
    Schedule s;
    s.plan_renewal(1, t0 + 1s, 0ms);
    s.plan_renewal(1, t0 + 5s, 0ms);
    EXPECT_TRUE(take_due(s, t0 + 4s).empty());
    EXPECT_EQ(s.next_wake(never), t0 + 5s);
    EXPECT_EQ(take_due(s, t0 + 5s), Ids{1});
}

// A confirmed renewal moves the deadline and plans the next renewal; the old deadline is gone.
TEST(RenewalSchedule, MovedDeadlineReplacesTheOldOne) {
    Schedule s;
    s.set_deadline(1, t0 + 3s);
    s.set_deadline(1, t0 + 6s);
    EXPECT_TRUE(take_expired(s, t0 + 5s).empty());
    EXPECT_EQ(s.next_wake(never), t0 + 6s);
    EXPECT_EQ(take_expired(s, t0 + 6s), Ids{1});
}

// A lease whose renewal is on the wire keeps its deadline: it is lost at safe_until even if the
// reply never comes.
TEST(RenewalSchedule, ExpiresAtTheDeadlineWhileItsRenewalIsTaken) {
    Schedule s;
    s.set_deadline(1, t0 + 3s);
    s.plan_renewal(1, t0 + 1s, 0ms);
    ASSERT_EQ(take_due(s, t0 + 1s), Ids{1});
    EXPECT_TRUE(take_expired(s, t0 + 2999ms).empty());
    EXPECT_EQ(take_expired(s, t0 + 3s), Ids{1});
    EXPECT_EQ(s.size(), 0u);
    EXPECT_EQ(s.next_wake(never), never);
}

TEST(RenewalSchedule, ExpiredLeaseIsForgottenWithItsRenewal) {
    Schedule s;
    s.set_deadline(1, t0 + 1s);
    s.plan_renewal(1, t0 + 2s, 0ms);  // too late to matter
    s.set_deadline(2, t0 + 5s);
    EXPECT_EQ(take_expired(s, t0 + 1s), Ids{1});
    EXPECT_TRUE(take_due(s, t0 + 2s).empty());
    EXPECT_EQ(s.size(), 1u);
}

TEST(RenewalSchedule, ForgottenLeaseIsNeitherDueNorExpiredNorWoken) {
    Schedule s;
    s.set_deadline(1, t0 + 3s);
    s.plan_renewal(1, t0 + 1s, 0ms);
    s.forget(1);
    s.forget(1);  // twice, or a lease never planned: nothing to do
    s.forget(7);
    EXPECT_EQ(s.next_wake(never), never);
    EXPECT_TRUE(take_due(s, never).empty());
    EXPECT_TRUE(take_expired(s, never).empty());
    EXPECT_EQ(s.size(), 0u);
}

// Leases with the same times are all kept and all taken.
TEST(RenewalSchedule, EqualTimesAreAllKept) {
    Schedule s;
    for (int i = 0; i < 3; ++i) {
        s.set_deadline(i, t0 + 3s);
        s.plan_renewal(i, t0 + 1s, 0ms);
    }
    s.forget(1);
    EXPECT_EQ(sorted(take_due(s, t0 + 1s)), (Ids{0, 2}));
    EXPECT_EQ(sorted(take_expired(s, t0 + 3s)), (Ids{0, 2}));
}

// The keeper's guarantee against spinning: after taking what is expired and due at `now`, the
// next wake-up is later than `now`, whatever was planned in the past.
TEST(RenewalSchedule, NextWakeIsAfterNowOnceTheDueAndExpiredAreTaken) {
    Schedule s;
    s.set_deadline(1, t0 - 1s);
    s.plan_renewal(2, t0 - 5s, 1s);  // a grant shorter than its lease: renewed at once
    s.set_deadline(2, t0 + 2s);
    s.plan_renewal(3, t0 + 1s, 0ms);
    s.set_deadline(3, t0 + 2s);
    EXPECT_EQ(take_expired(s, t0), Ids{1});
    EXPECT_EQ(take_due(s, t0), Ids{2});
    EXPECT_GT(s.next_wake(never), t0);
    EXPECT_EQ(s.next_wake(never), t0 + 1s);
}

// A lease whose renewals keep failing is retried (retry_at) until its deadline and then lost:
// the schedule always has a retry or the deadline to wake for.
TEST(RenewalSchedule, FailingRenewalsAreRetriedUntilTheDeadline) {
    const RenewalPolicy policy{.interval = 1000ms, .retry_delay = 100ms, .drift_factor = 0.01};
    Schedule s;
    const LeaseTimes times = after_confirmation(t0, 3000ms, policy);
    s.set_deadline(1, times.safe_until);
    s.plan_renewal(1, times.next_renewal, policy.interval / 4);
    steady_time now = t0;
    int attempts = 0;
    while (true) {
        now = s.next_wake(never);
        ASSERT_LT(now, never);
        Ids lost = take_expired(s, now);
        if (!lost.empty()) {
            EXPECT_EQ(lost, Ids{1});
            break;
        }
        ASSERT_EQ(take_due(s, now), Ids{1});
        ++attempts;
        ASSERT_LT(attempts, 1000);
        const steady_time received = now + 50ms;  // each attempt fails after 50 ms
        s.plan_renewal(1, retry_at(received, times.safe_until, policy), policy.interval / 4);
    }
    EXPECT_EQ(now, times.safe_until);
    EXPECT_GE(attempts, 2);
}

// Leases renewed on schedule arrive in time order and take the O(1) path; a retry (or a
// shorter interval) arrives out of order and must still come out in time order.
TEST(RenewalSchedule, OutOfOrderTimesStillComeOutInTimeOrder) {
    Schedule s;
    for (int i = 0; i < 5; ++i) s.plan_renewal(i, t0 + i * 1s, 0ms);
    EXPECT_EQ(s.s.out_of_order(), 0u);
    s.plan_renewal(10, t0 + 1500ms, 0ms);  // a retry, sooner than the last planned
    s.plan_renewal(11, t0 + 500ms, 0ms);
    EXPECT_EQ(s.s.out_of_order(), 4u) << "due and wake entries of both";
    EXPECT_EQ(s.next_wake(never), t0);
    EXPECT_EQ(take_due(s, t0 + 2s), (Ids{0, 11, 1, 10, 2}));
    EXPECT_EQ(s.next_wake(never), t0 + 3s);
    EXPECT_EQ(take_due(s, never), (Ids{3, 4}));
}

// Replanned and forgotten entries are left behind as stale, not searched for; they must not
// pile up (memory) nor keep forgotten leases alive for long.
TEST(RenewalSchedule, StaleEntriesAreCompactedAway) {
    Schedule s;
    s.set_deadline(0, t0 + 10s);
    s.plan_renewal(0, t0 + 1s, 0ms);
    std::weak_ptr<FakeLease> first;
    for (int i = 1; i <= 10'000; ++i) {
        s.set_deadline(i, t0 + 10s);
        s.plan_renewal(i, t0 + 1s, 0ms);
        s.plan_renewal(i, t0 + 2s, 0ms);  // replanned: two stale entries
        s.forget(i);                      // released: all its entries stale
        if (i == 1) first = s[1];
        s.leases.erase(i);
    }
    EXPECT_LT(s.s.entries(), 5'000u);
    EXPECT_TRUE(first.expired()) << "a forgotten lease is freed once its entries are compacted";
    EXPECT_EQ(s.size(), 1u);
    EXPECT_EQ(take_due(s, t0 + 5s), Ids{0});
    EXPECT_EQ(take_expired(s, never), Ids{0});
}

}  // namespace
}  // namespace fencelock::detail
