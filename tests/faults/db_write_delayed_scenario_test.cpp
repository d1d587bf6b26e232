// A database write delayed past a takeover. Holder A reads, checks its lease and sends its
// write; the write is held on its way to the database (a fault proxy in front of PostgreSQL, a
// gate in front of SQLite and the file register: write_delay.hpp) until A's lease has expired
// in Redis and B has taken over, read and written. Then A's write arrives.
// Fenced: the store refuses it as stale and B's append stays. Unfenced (negative control): it
// is accepted with the older fence and B's acknowledged append is lost.
#include <future>

#include "faults/scenario.hpp"
#include "faults/write_delay.hpp"

namespace fencelock::faults {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using test_support::eventually;

using DbWriteDelayed = ScenarioTest;

TEST_P(DbWriteDelayed, WriteArrivingAfterTheTakeoverIsRejectedOnlyWithFencing) {
    const std::string r = "delayed:db-write";
    constexpr auto lease = 300ms;
    auto c = client();
    auto delay = make_write_delay(backend(), fencing(), target_location);
    auto a_rec = recorder("A"), b_rec = recorder("B");
    RmwWorker a(*a_rec, delay->target()), b(*b_rec, *target);

    auto lease_a = record_acquire(*a_rec, r, [&] { return c.try_acquire(res(r), {.lease = lease}); });
    ASSERT_TRUE(lease_a);
    const auto fence_a = lease_a->fence.value();
    const auto a_start = now_ns();
    const std::string a_base = a.read(r, fence_a);  // also opens A's connection before the fault
    ASSERT_TRUE(still_valid(*lease_a));
    a_rec->hold(r, fence_a, a_start, now_ns());

    delay->hold();
    const auto sent = Clock::now();
    auto late = std::async(std::launch::async, [&] { return a.write(r, a_base, "A", fence_a); });
    // A failed assertion must not leave the write held: the future would wait for it forever.
    const std::unique_ptr<WriteDelay, void (*)(WriteDelay*)> let_go(delay.get(), [](WriteDelay* d) { d->release(); });
    ASSERT_TRUE(eventually([&] { return delay->holding(); })) << "A's write never reached the " << delay->how();
    ASSERT_TRUE(eventually([&] { return lock_gone(c, r); }, 5s)) << "A's lease never expired";

    auto lease_b = record_acquire(*b_rec, r, [&] { return c.try_acquire(res(r), {.lease = 5s}); });
    ASSERT_TRUE(lease_b) << "B could not take over";
    const auto b_start = now_ns();
    const std::string b_base = b.read(r, lease_b->fence.value());
    ASSERT_TRUE(still_valid(*lease_b));
    b_rec->hold(r, lease_b->fence.value(), b_start, now_ns());
    EXPECT_EQ(b.write(r, b_base, "B", lease_b->fence.value()), TargetStatus::applied);
    ASSERT_TRUE(c.release(res(r), lease_b->owner));

    delay->release();
    const TargetStatus arrived = late.get();
    const auto delayed_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - sent).count();
    if (fencing()) {
        EXPECT_EQ(arrived, TargetStatus::stale) << "the delayed write got in";
        EXPECT_EQ(target->read(r), "B");
        EXPECT_EQ(target->last_fence(r), lease_b->fence.value());
    } else {
        EXPECT_EQ(arrived, TargetStatus::applied);
    }
    const Report report = check_history();
    expect_verdict(report);
    expect_linearizability_caught();
    summary("db_write_delayed_past_takeover")
        .add("protection", "target fence check")
        .report(report)
        .linearizability(lin)
        .add("delayed_by", delay->how())
        .add("late_write", std::string(to_string(arrived)))
        .add("lease_ms", lease.count())
        .add("write_delayed_ms", delayed_ms)
        .add("fence_delayed", static_cast<std::int64_t>(fence_a))
        .add("fence_taker", static_cast<std::int64_t>(lease_b->fence.value()))
        .print();
}

INSTANTIATE_TEST_SUITE_P(Faults, DbWriteDelayed, ::testing::ValuesIn(all_backends()), mode_name);

}  // namespace
}  // namespace fencelock::faults
