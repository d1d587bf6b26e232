// Lock messages delayed in the network past a takeover, with the fault proxy holding the
// old owner's request bytes until the new owner is in place.
//
// Release: A's compare-and-delete arrives after its lease expired and B took over; it must
// answer not_owner and leave B's lease intact. The negative control sends the owner-blind
// `DEL lock:{R}` a naive unlock would send, through the same delayed path, to an unfenced
// target: B's lease is deleted, C gets in beside B, and B's late write wipes C's.
//
// Renewal: A's keeper renewal is held while A's lease expires and B takes over and writes;
// released, it must answer not_owner (B's lease untouched, renewals 0). A, which passed its
// validity check before the renewal stalled, then writes with its old fence: rejected by the
// fenced target, accepted (B's append lost) by the unfenced one.
#include <future>

#include "faults/fault_proxy.hpp"
#include "faults/scenario.hpp"
#include "support/raw_redis.hpp"

namespace fencelock::faults {
namespace {

using namespace std::chrono_literals;
using test_support::eventually;
using test_support::RawRedis;

using DelayedRelease = ScenarioTest;

TEST_P(DelayedRelease, LateReleaseLeavesTheNewOwnersLeaseIntact) {
    const std::string r = "delayed:release";
    FaultProxy proxy(redis->port());
    auto via_proxy = client({.command_timeout = 5s}, proxy.url());
    auto direct = client();
    auto a_rec = recorder("A"), b_rec = recorder("B"), c_rec = recorder("C");
    RmwWorker a(*a_rec, *target), b(*b_rec, *target), c(*c_rec, *target);

    // A: a short lease through the proxy; reads, writes, then releases late.
    auto lease_a = record_acquire(*a_rec, r, [&] { return via_proxy.try_acquire(res(r), {.lease = 300ms}); });
    ASSERT_TRUE(lease_a);
    const auto a_start = now_ns();
    const std::string a_base = a.read(r, lease_a->fence.value());
    ASSERT_TRUE(still_valid(*lease_a));
    a_rec->hold(r, lease_a->fence.value(), a_start, now_ns());
    ASSERT_EQ(a.write(r, a_base, "A", lease_a->fence.value()), TargetStatus::applied);

    proxy.hold_requests();
    const auto held_at = std::chrono::steady_clock::now();
    std::unique_ptr<RawRedis> naive;
    std::future<Result<ReleaseStatus>> release;
    const auto release_id = a_rec->invoke(OpKind::release, r, lease_a->fence.value());
    if (fencing()) {
        release = std::async(std::launch::async, [&] { return via_proxy.release(res(r), lease_a->owner); });
    } else {
        naive = std::make_unique<RawRedis>(proxy.port());
        naive->send({"DEL", "lock:{" + r + "}"});
    }
    ASSERT_TRUE(eventually([&] { return proxy.counters().held_up > 0; })) << "the release never reached the proxy";
    ASSERT_TRUE(eventually([&] { return lock_gone(direct, r); }, 5s)) << "A's lease never expired";

    // B takes over with a long lease and reads; then A's release arrives.
    auto lease_b = record_acquire(*b_rec, r, [&] { return direct.try_acquire(res(r), {.lease = 5s}); });
    ASSERT_TRUE(lease_b);
    const auto b_start = now_ns();
    const std::string b_base = b.read(r, lease_b->fence.value());
    const auto delayed_for = std::chrono::steady_clock::now() - held_at;
    proxy.release();
    std::string released;
    if (fencing()) {
        auto result = release.get();
        ASSERT_TRUE(result) << result.error().message();
        released = std::string(to_string(*result));
        EXPECT_EQ(*result, ReleaseStatus::not_owner);
    } else {
        released = naive->read_line(5s).value_or("no reply");
    }
    a_rec->complete(release_id, Outcome::ok, 0, {}, released);
    auto info = direct.inspect(res(r));
    ASSERT_TRUE(info);
    const bool intact = info->holder && info->holder->owner == lease_b->owner.str();
    if (fencing()) {
        ASSERT_TRUE(intact) << "a late release removed the new owner's lease";
        EXPECT_EQ(info->holder->fence, lease_b->fence);
    }

    // C tries to get in while B still holds (its lease has seconds left).
    auto lease_c = record_acquire(*c_rec, r, [&] { return direct.try_acquire(res(r), {.lease = 5s}); });
    EXPECT_EQ(lease_c.has_value(), !intact);
    if (lease_c) {
        const auto c_start = now_ns();
        const std::string c_base = c.read(r, lease_c->fence.value());
        ASSERT_TRUE(still_valid(*lease_c));
        c_rec->hold(r, lease_c->fence.value(), c_start, now_ns());
        c.write(r, c_base, "C", lease_c->fence.value());
        (void)direct.release(res(r), lease_c->owner);
    }
    ASSERT_TRUE(still_valid(*lease_b));
    b_rec->hold(r, lease_b->fence.value(), b_start, now_ns());
    b.write(r, b_base, "B", lease_b->fence.value());
    (void)direct.release(res(r), lease_b->owner);

    if (fencing()) {
        EXPECT_EQ(target->last_fence(r), lease_b->fence.value()) << "B's fence is the last accepted";
    }
    const Report report = check_history();
    expect_verdict(report);
    expect_linearizability_caught();
    summary("release_delayed_past_takeover")
        .add("protection", "compare-and-delete release + target fence check")
        .report(report)
        .linearizability(lin)
        .add("late_release", released)
        .flag("new_owner_intact", intact)
        .flag("third_holder_got_in", lease_c.has_value())
        .add("release_delayed_ms", std::chrono::duration_cast<std::chrono::milliseconds>(delayed_for).count())
        .print();
}

using DelayedRenewal = ScenarioTest;

TEST_P(DelayedRenewal, LateRenewalDoesNotExtendTheNewOwnersLease) {
    const std::string r = "delayed:renewal";
    FaultProxy proxy(redis->port());
    auto via_proxy = client({.command_timeout = 5s}, proxy.url());
    auto direct = client();
    auto a_rec = recorder("A"), b_rec = recorder("B");
    RmwWorker a(*a_rec, *target), b(*b_rec, *target);

    const auto acquire_id = a_rec->invoke(OpKind::acquire, r);
    auto held = via_proxy.hold(res(r), {.lease = 300ms});
    ASSERT_TRUE(held && held->acquired());
    HeldLease& lease_a = *held->lease;
    const auto fence_a = lease_a.fence().value();
    a_rec->complete(acquire_id, Outcome::ok, fence_a);
    const auto a_start = now_ns();
    const std::string a_base = a.read(r, fence_a);
    ASSERT_TRUE(lease_a.valid());
    a_rec->hold(r, fence_a, a_start, now_ns());

    // The next renewal leaves A's keeper and stalls in the network.
    const auto renewals_before = lease_a.renewals();
    proxy.hold_requests();
    const auto stalled_at = std::chrono::steady_clock::now();
    ASSERT_TRUE(eventually([&] { return proxy.counters().held_up > 0; })) << "no renewal was sent";
    ASSERT_TRUE(eventually([&] { return lock_gone(direct, r); }, 5s)) << "A's lease never expired";
    EXPECT_FALSE(lease_a.valid()) << "A must not believe in a lease Redis let expire";

    auto lease_b = record_acquire(*b_rec, r, [&] { return direct.try_acquire(res(r), {.lease = 5s}); });
    ASSERT_TRUE(lease_b);
    const auto b_start = now_ns();
    const std::string b_base = b.read(r, lease_b->fence.value());
    ASSERT_TRUE(still_valid(*lease_b));
    b_rec->hold(r, lease_b->fence.value(), b_start, now_ns());
    EXPECT_EQ(b.write(r, b_base, "B", lease_b->fence.value()), TargetStatus::applied);

    proxy.release();  // the stale renewal reaches Redis now
    ASSERT_TRUE(eventually([&] { return lease_a.loss().has_value(); }, 5s)) << "A never learned it lost the lease";
    const auto stalled_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - stalled_at).count();
    auto info = direct.inspect(res(r));
    ASSERT_TRUE(info && info->holder);
    EXPECT_EQ(info->holder->owner, lease_b->owner.str());
    EXPECT_EQ(info->holder->fence, lease_b->fence);
    EXPECT_EQ(info->holder->renewals, 0u) << "A's late renewal extended B's lease";
    EXPECT_EQ(lease_a.renewals(), renewals_before) << "a renewal was confirmed after the lease was lost";

    // A passed its validity check before the renewal stalled, and writes now.
    a.write(r, a_base, "A", fence_a);
    (void)lease_a.release();
    (void)direct.release(res(r), lease_b->owner);

    if (fencing()) {
        EXPECT_EQ(target->last_fence(r), lease_b->fence.value());
    }
    const Report report = check_history();
    expect_verdict(report);
    expect_linearizability_caught();
    summary("renewal_delayed_past_takeover")
        .add("protection", "target fence check")
        .report(report)
        .linearizability(lin)
        .add("loss_reason", std::string(to_string(*lease_a.loss())))
        .add("new_owner_renewals", static_cast<std::int64_t>(info->holder->renewals))
        .add("renewal_stalled_ms", stalled_ms)
        .print();
}

INSTANTIATE_TEST_SUITE_P(Faults, DelayedRelease, ::testing::ValuesIn(no_postgres()), mode_name);
INSTANTIATE_TEST_SUITE_P(Faults, DelayedRenewal, ::testing::ValuesIn(no_postgres()), mode_name);

}  // namespace
}  // namespace fencelock::faults
