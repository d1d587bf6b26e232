// Redis restarted without persistence: `fence:{R}` is gone, and so is every lease.
//
// A fence is max(counter + 1, Redis TIME in us) (docs/DESIGN.md, "Fences across failover"):
// the first ownership after the restart gets a fence above every fence issued before it, so
// its write is accepted at once and nothing stale exists to reject. The negative control
// takes its fences from a plain `INCR` counter (the failover scenario's naive source) and
// turns the target's fence check off: the counter starts again at 1 and the target accepts a
// fence below the last one it took, which the checker must catch.
#include "faults/failover_fences.hpp"
#include "faults/scenario.hpp"

namespace fencelock::faults {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

using RedisRestart = ScenarioTest;

TEST_P(RedisRestart, TheFirstFenceAfterARestartIsAboveEveryEarlierOneAndItsWriteIsAccepted) {
    const std::string r = "restart:counter";
    auto c = client({.connect_timeout = 200ms, .command_timeout = 200ms});
    const auto fences = fencing() ? fencelock_fences() : naive_fences();
    auto rec = recorder("W");
    RmwWorker w(*rec, *target);
    constexpr int before_restart = 5;
    int job = 0;

    // One round: acquire, read, append, write, release. Returns the write's status.
    auto round = [&]() -> std::optional<TargetStatus> {
        // One attempt: every round releases, so the lock is free.
        auto lease = record_acquire(*rec, r, [&] { return fences->try_acquire(redis->port(), r, 5s); });
        if (!lease) return std::nullopt;
        const auto start = now_ns();
        const std::string base = w.read(r, lease->fence.value());
        if (!still_valid(*lease)) return std::nullopt;
        rec->hold(r, lease->fence.value(), start, now_ns());
        const auto status = w.write(r, base, "j" + std::to_string(++job), lease->fence.value());
        fences->release(redis->port(), *lease);
        return status;
    };

    for (int i = 0; i < before_restart; ++i) ASSERT_EQ(round(), TargetStatus::applied);
    const auto last_before = target->last_fence(r);
    ASSERT_GT(last_before, 0u);

    redis->kill();
    redis->start();
    const auto restarted = Clock::now();
    int attempts = 0, rejected = 0;
    std::optional<TargetStatus> status;
    do {
        ++attempts;
        status = round();
        ASSERT_TRUE(status.has_value()) << "no lease after the restart";
        if (*status == TargetStatus::stale) ++rejected;
    } while (*status != TargetStatus::applied && attempts < 3 * before_restart);
    const auto recovery_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - restarted).count();
    ASSERT_EQ(status, TargetStatus::applied) << "writes never succeeded again";
    auto info = c.inspect(res(r));
    ASSERT_TRUE(info);

    EXPECT_EQ(rejected, 0) << "a fence after the restart was refused as stale";
    EXPECT_EQ(attempts, 1);
    if (fencing()) {
        EXPECT_GT(info->last_fence.value(), last_before) << "the counter went backwards";
        EXPECT_GT(target->last_fence(r), last_before);
    }
    const Report report = check_history();
    expect_verdict(report);
    expect_linearizability_caught();
    std::printf("after the restart: %d attempts, %d refused as stale, %lld ms until a write succeeded\n", attempts,
                rejected, static_cast<long long>(recovery_ms));
    summary("redis_restart_no_persistence")
        .add("protection", "fences that follow the server clock + target fence check")
        .report(report)
        .linearizability(lin)
        .add("last_fence_before_restart", static_cast<std::int64_t>(last_before))
        .add("stale_rejected", rejected)
        .add("attempts_until_accepted", attempts)
        .add("recovery_ms", recovery_ms)
        .add("counter_after", static_cast<std::int64_t>(info->last_fence.value()))
        .print();
}

INSTANTIATE_TEST_SUITE_P(Faults, RedisRestart, ::testing::ValuesIn(all_backends()), mode_name);

}  // namespace
}  // namespace fencelock::faults
