// The reply to an acquisition is lost (the fault proxy swallows it): Redis granted the lease
// and incremented the counter, the client saw a timeout.
//
// Protected: acquire() keeps one owner token for all attempts, so its retry finds the lease it
// was already granted and gets it back with the same fence (reacquired), promptly; the counter
// moved once. Negative control: a naive retry with a fresh token per attempt is blocked by its
// own orphaned lease until that expires, and burns a second fence; the completion bound
// (shorter than the lease) catches the stall.
#include <thread>

#include "faults/fault_proxy.hpp"
#include "faults/scenario.hpp"

namespace fencelock::faults {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using test_support::eventually;

using LostAcquireReply = ScenarioTest;

TEST_P(LostAcquireReply, SameOwnerRetryRecoversTheLeaseAndItsFence) {
    const std::string r = "lost:reply";
    constexpr auto lease = 2s;
    constexpr auto bound = 1s;  // for completing one acquisition; shorter than the lease
    FaultProxy proxy(redis->port());
    auto c = client({.command_timeout = 200ms, .pool_size = 1}, proxy.url());
    auto direct = client();
    // Warm up: Redis caches the acquire script, so the lost request is the one that runs it.
    {
        auto warm = c.try_acquire(res("warmup"), {.lease = 1s});
        ASSERT_TRUE(warm && warm->acquired());
        ASSERT_TRUE(c.release(res("warmup"), warm->lease->owner));
    }
    auto rec = recorder("A");
    RmwWorker w(*rec, *target);
    const AcquireOptions options{.lease = lease, .wait = 5s, .backoff = {.base = 10ms, .max = 50ms}};

    proxy.drop_next_replies(1);
    const auto t0 = Clock::now();
    std::optional<Lease> got;
    std::string first_error;
    if (fencing()) {
        got = record_acquire(*rec, r, [&] { return c.acquire(res(r), options); });
    } else {
        // A naive client: on an error, try again with a NEW owner token each time (its own,
        // so the library cannot free the orphaned grant for it).
        got = record_acquire(*rec, r, [&]() -> Result<Acquisition> {
            const auto deadline = Clock::now() + options.wait;
            for (;;) {
                auto attempt = c.try_acquire(res(r), OwnerToken::generate(), {.lease = lease});
                if (!attempt && first_error.empty()) first_error = attempt.error().message();
                if ((attempt && attempt->acquired()) || Clock::now() >= deadline) return attempt;
                std::this_thread::sleep_for(20ms);  // the naive client's fixed retry pause
            }
        });
    }
    const auto recovered_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
    ASSERT_TRUE(got) << "the lease was never obtained";
    EXPECT_GT(proxy.counters().dropped_down, 0u) << "no reply was dropped";
    auto info = direct.inspect(res(r));
    ASSERT_TRUE(info && info->holder);
    EXPECT_EQ(info->holder->owner, got->owner.str());

    const auto start = now_ns();
    const std::string base = w.read(r, got->fence.value());
    if (still_valid(*got)) rec->hold(r, got->fence.value(), start, now_ns());
    EXPECT_EQ(w.write(r, base, "A", got->fence.value()), TargetStatus::applied);
    (void)c.release(res(r), got->owner);

    if (fencing()) {
        EXPECT_TRUE(got->reacquired) << "the retry should have found the lease granted to the lost attempt";
        EXPECT_EQ(info->last_fence, got->fence) << "the counter must move once";
    } else {
        EXPECT_FALSE(got->reacquired) << "a fresh token cannot find the orphaned grant: it burned a fence";
    }
    const Report report = check_history({.completion_bound = bound});
    expect_verdict(report);
    summary("acquire_reply_lost")
        .add("protection", "same-owner retry")
        .report(report)
        .linearizability(lin)
        .flag("reacquired", got->reacquired)
        .add("fence", static_cast<std::int64_t>(got->fence.value()))
        .add("counter", static_cast<std::int64_t>(info->last_fence.value()))
        .add("recovery_ms", recovered_ms)
        .add("lease_ms", std::chrono::duration_cast<std::chrono::milliseconds>(lease).count())
        .print();
}

INSTANTIATE_TEST_SUITE_P(Faults, LostAcquireReply, ::testing::ValuesIn(no_postgres()), mode_name);

}  // namespace
}  // namespace fencelock::faults
