#include "faults/paused_holder.hpp"

#include <signal.h>

#include <fstream>

#include "local_servers/child_process.hpp"

namespace fencelock::faults {

using namespace std::chrono_literals;
using test_support::eventually;

void PausedHolder::run_case(const PausedHolderCase& c) {
    const std::string r = "paused:holder";
    const auto ready = dir / "a.ready", go = dir / "a.go";
    const pid_t a = local::start_process({FAULT_WORKER_BIN, c.url, r, std::to_string(c.lease.count()), target_spec(),
                                          (history_dir / "A.jsonl").string(), "A", ready.string(), go.string()});
    ASSERT_TRUE(eventually([&] { return std::filesystem::exists(ready); })) << "worker A never got ready";
    std::uint64_t a_fence = 0;
    std::ifstream(ready) >> a_fence;

    ::kill(a, SIGSTOP);
    const auto stopped = std::chrono::steady_clock::now();
    auto taker = client({}, c.url);
    ASSERT_TRUE(eventually([&] { return lock_gone(taker, r); }, 10s)) << "A's lease never expired";
    const auto expired_after = std::chrono::steady_clock::now() - stopped;

    auto b_rec = recorder("B");
    RmwWorker b(*b_rec, *target);
    auto lease_b = record_acquire(*b_rec, r, [&] { return taker.try_acquire(res(r), {.lease = 10s}); });
    ASSERT_TRUE(lease_b) << "B could not take over";
    const auto b_start = now_ns();
    const std::string base = b.read(r, lease_b->fence.value());
    ASSERT_TRUE(still_valid(*lease_b));
    b_rec->hold(r, lease_b->fence.value(), b_start, now_ns());
    EXPECT_EQ(b.write(r, base, "B", lease_b->fence.value()), TargetStatus::applied);
    ASSERT_TRUE(taker.release(res(r), lease_b->owner));

    // The pause itself is what is tested: keep A frozen at least this long.
    ASSERT_TRUE(eventually([&] { return std::chrono::steady_clock::now() - stopped >= c.pause; }));
    const auto paused_for = std::chrono::steady_clock::now() - stopped;
    { std::ofstream(go) << "go\n"; }
    ::kill(a, SIGCONT);
    ASSERT_EQ(local::wait_process(a), 0) << "worker A failed";

    const Report report = check_history();
    const auto h = history();
    std::int64_t stale_rejected = 0;
    for (const auto& op : h.ops)
        if (op.kind == OpKind::write && op.note == "stale") ++stale_rejected;
    EXPECT_GT(lease_b->fence.value(), a_fence) << "the taker's fence is newer than A's";
    if (fencing()) {
        EXPECT_EQ(stale_rejected, 1);
        EXPECT_EQ(target->last_fence(r), lease_b->fence.value()) << "the newest owner's fence is the last accepted";
        EXPECT_EQ(target->read(r), "B");
    } else {
        EXPECT_EQ(report.stale_accepted, 1u);
        EXPECT_FALSE(report.final_state.empty()) << "B's append should be lost";
    }
    expect_verdict(report);
    expect_linearizability_caught();
    auto line = summary(c.scenario);
    line.add("protection", "target fence check");
    if (!c.coordinator.empty()) line.add("coordinator", c.coordinator);
    line.report(report)
        .linearizability(lin)
        .add("stale_rejected", stale_rejected)
        .add("lease_ms", c.lease.count())
        .add("paused_ms", std::chrono::duration_cast<std::chrono::milliseconds>(paused_for).count())
        .add("takeover_after_ms", std::chrono::duration_cast<std::chrono::milliseconds>(expired_after).count())
        .add("fence_paused", static_cast<std::int64_t>(a_fence))
        .add("fence_taker", static_cast<std::int64_t>(lease_b->fence.value()))
        .print();
}

}  // namespace fencelock::faults
