// CPU starvation: busy threads on every core (twice the core count) while several holders run
// read-modify-write rounds with kept leases, each holding for at least one renewal interval.
// The keeper must keep renewing in time; a holder
// whose lease is lost anyway skips its write (it checks validity right before writing).
//
// One laggard stands for the thread starvation freezes between its last validity check and
// its write: it holds a plain lease, checks it, and writes only after its lease has expired
// and the others have written (a latch, not luck, decides the order). Fenced: the laggard's
// write is refused and the history is clean. Unfenced (negative control): the laggard's
// write wipes the others' appends.
#include <atomic>
#include <thread>

#include "faults/scenario.hpp"

namespace fencelock::faults {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using test_support::eventually;

using CpuStarvation = ScenarioTest;

TEST_P(CpuStarvation, HoldersUnderLoadLeaveACleanHistory) {
    const std::string r = "starved:record";
    constexpr int workers = 4, rounds = 3;
    std::atomic<bool> spin{true};
    std::vector<std::jthread> hogs;
    const unsigned cores = std::max(2u, std::thread::hardware_concurrency());
    for (unsigned i = 0; i < 2 * cores; ++i)
        hogs.emplace_back([&] {
            volatile std::uint64_t x = 0;
            while (spin.load(std::memory_order_relaxed)) x = x + 1;
        });
    const auto t0 = Clock::now();

    // The laggard: holds, reads, checks, then "is starved" until the others are done.
    auto l_client = client();
    auto l_rec = recorder("laggard");
    RmwWorker laggard(*l_rec, *target);
    auto lease_l = record_acquire(*l_rec, r, [&] { return l_client.try_acquire(res(r), {.lease = 300ms}); });
    ASSERT_TRUE(lease_l);
    const auto l_start = now_ns();
    const std::string l_base = laggard.read(r, lease_l->fence.value());
    ASSERT_TRUE(still_valid(*lease_l));
    l_rec->hold(r, lease_l->fence.value(), l_start, now_ns());
    ASSERT_TRUE(eventually([&] { return lock_gone(l_client, r); }, 10s));

    std::atomic<std::int64_t> max_lateness_us{0}, lost{0}, skipped{0};
    {
        std::vector<std::jthread> threads;
        for (int t = 0; t < workers; ++t)
            threads.emplace_back([&, t] {
                const std::string name = "w" + std::to_string(t);
                auto c = client();
                auto rec = recorder(name);
                RmwWorker w(*rec, *target);
                for (int k = 0; k < rounds; ++k) {
                    const auto id = rec->invoke(OpKind::acquire, r);
                    auto held = c.hold(res(r), {.lease = 450ms, .wait = 20s, .backoff = {.base = 5ms, .max = 50ms}});
                    if (!held || !held->acquired()) {
                        rec->complete(id, Outcome::fail, 0, {}, held ? "contended" : held.error().message());
                        continue;
                    }
                    HeldLease& lease = *held->lease;
                    const auto fence = lease.fence().value();
                    rec->complete(id, Outcome::ok, fence);
                    const auto start = now_ns();
                    const std::string base = w.read(r, fence);
                    // Work for one renewal interval, so the keeper has to renew under load.
                    (void)eventually([&] { return lease.renewals() >= 1 || !lease.valid(); }, 10s);
                    if (lease.valid()) {
                        rec->hold(r, fence, start, now_ns());
                        w.write(r, base, name + "." + std::to_string(k), fence);
                    } else {
                        ++skipped;
                    }
                    (void)lease.release();
                }
                const auto stats = c.keeper_stats();
                lost += static_cast<std::int64_t>(stats.leases_lost);
                std::int64_t late = stats.max_send_lateness.count(), cur = max_lateness_us.load();
                while (late > cur && !max_lateness_us.compare_exchange_weak(cur, late)) {
                }
            });
    }
    const auto late = laggard.write(r, l_base, "laggard", lease_l->fence.value());
    spin = false;
    hogs.clear();
    const auto elapsed_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();

    if (fencing()) {
        EXPECT_EQ(late, TargetStatus::stale);
    }
    const Report report = check_history({.completion_bound = 30s});
    expect_verdict(report);
    expect_linearizability_caught();
    summary("cpu_starvation")
        .add("protection", "target fence check")
        .report(report)
        .linearizability(lin)
        .add("busy_threads", static_cast<std::int64_t>(2 * cores))
        .add("holders", workers)
        .add("rounds", workers * rounds)
        .add("writes_skipped_lease_invalid", skipped.load())
        .add("leases_lost", lost.load())
        .add("keeper_max_send_lateness_us", max_lateness_us.load())
        .add("laggard_write", std::string(to_string(late)))
        .add("elapsed_ms", elapsed_ms)
        .print();
}

INSTANTIATE_TEST_SUITE_P(Faults, CpuStarvation, ::testing::ValuesIn(no_postgres()), mode_name);

}  // namespace
}  // namespace fencelock::faults
