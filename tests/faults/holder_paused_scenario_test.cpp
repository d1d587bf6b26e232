// A holder process frozen with SIGSTOP for 3x its lease, between its last validity check and
// its write (the pause fencing exists for: GC, swapping, a stopped VM). Another holder takes
// over and writes; then the frozen one resumes and writes with its old fence.
// Fenced: the target rejects the stale write. Unfenced: it overwrites the newer owner's append.
#include <signal.h>

#include <fstream>

#include "faults/scenario.hpp"
#include "local_servers/child_process.hpp"

namespace fencelock::faults {
namespace {

using namespace std::chrono_literals;
using test_support::eventually;

using HolderPaused = ScenarioTest;

TEST_P(HolderPaused, StaleWriteAfterThreeLeasesIsRejectedOnlyWithFencing) {
    const std::string r = "paused:holder";
    constexpr auto lease = 300ms;
    const auto ready = dir / "a.ready", go = dir / "a.go";
    const pid_t a =
        local::start_process({FAULT_WORKER_BIN, redis->url(), r, std::to_string(lease.count()), target_spec(),
                              (history_dir / "A.jsonl").string(), "A", ready.string(), go.string()});
    ASSERT_TRUE(eventually([&] { return std::filesystem::exists(ready); })) << "worker A never got ready";
    std::uint64_t a_fence = 0;
    std::ifstream(ready) >> a_fence;

    ::kill(a, SIGSTOP);
    const auto stopped = std::chrono::steady_clock::now();
    auto c = client();
    ASSERT_TRUE(eventually([&] { return lock_gone(c, r); }, 5s)) << "A's lease never expired";
    const auto expired_after = std::chrono::steady_clock::now() - stopped;

    auto b_rec = recorder("B");
    RmwWorker b(*b_rec, *target);
    auto lease_b = record_acquire(*b_rec, r, [&] { return c.try_acquire(res(r), {.lease = 5s}); });
    ASSERT_TRUE(lease_b) << "B could not take over";
    const auto b_start = now_ns();
    const std::string base = b.read(r, lease_b->fence.value());
    ASSERT_TRUE(still_valid(*lease_b));
    b_rec->hold(r, lease_b->fence.value(), b_start, now_ns());
    EXPECT_EQ(b.write(r, base, "B", lease_b->fence.value()), TargetStatus::applied);
    ASSERT_TRUE(c.release(res(r), lease_b->owner));

    // The pause itself is what is tested: keep A frozen until three leases have passed.
    ASSERT_TRUE(eventually([&] { return std::chrono::steady_clock::now() - stopped >= 3 * lease; }));
    const auto paused_for = std::chrono::steady_clock::now() - stopped;
    { std::ofstream(go) << "go\n"; }
    ::kill(a, SIGCONT);
    ASSERT_EQ(local::wait_process(a), 0) << "worker A failed";

    const Report report = check_history();
    const auto h = history();
    std::int64_t stale_rejected = 0;
    for (const auto& op : h.ops)
        if (op.kind == OpKind::write && op.note == "stale") ++stale_rejected;
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
    summary("holder_paused_3x")
        .add("protection", "target fence check")
        .report(report)
        .linearizability(lin)
        .add("stale_rejected", stale_rejected)
        .add("lease_ms", lease.count())
        .add("paused_ms", std::chrono::duration_cast<std::chrono::milliseconds>(paused_for).count())
        .add("takeover_after_ms", std::chrono::duration_cast<std::chrono::milliseconds>(expired_after).count())
        .add("fence_paused", static_cast<std::int64_t>(a_fence))
        .add("fence_taker", static_cast<std::int64_t>(lease_b->fence.value()))
        .print();
}

INSTANTIATE_TEST_SUITE_P(Faults, HolderPaused, ::testing::ValuesIn(all_backends()), mode_name);

}  // namespace
}  // namespace fencelock::faults
