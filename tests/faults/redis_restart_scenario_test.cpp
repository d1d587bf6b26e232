// Redis restarted without persistence: `fence:{R}` is gone, so the counter starts again at 1
// and new owners get fences LOWER than the last one the target accepted.
//
// What happens, by design (docs/DESIGN.md, "Failure model"): the target's check still compares
// against the last fence it accepted, so every write with a regressed fence is refused as
// stale. Writers stall: each new ownership burns one number, and writes succeed again only
// once the counter passes the target's last fence (here: after `last_fence` more grants).
// Nothing stale gets through; the cost is availability for that resource. Keeping the counter
// in the authoritative database (or any durable, consistent store) removes the stall, because
// the counter then never regresses. Without fencing (the negative control) the first write
// after the restart is accepted with an old fence.
#include "faults/scenario.hpp"

namespace fencelock::faults {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

using RedisRestart = ScenarioTest;

TEST_P(RedisRestart, RegressedFencesAreRefusedUntilTheCounterCatchesUp) {
    const std::string r = "restart:counter";
    auto c = client({.connect_timeout = 200ms, .command_timeout = 200ms});
    auto rec = recorder("W");
    RmwWorker w(*rec, *target);
    constexpr int before_restart = 5;
    int job = 0;

    // One round: acquire, read, append, write, release. Returns the write's status.
    auto round = [&]() -> std::optional<TargetStatus> {
        auto lease = record_acquire(*rec, r, [&] { return c.acquire(res(r), {.lease = 5s, .wait = 3s}); });
        if (!lease) return std::nullopt;
        const auto start = now_ns();
        const std::string base = w.read(r, lease->fence.value());
        if (!still_valid(*lease)) return std::nullopt;
        rec->hold(r, lease->fence.value(), start, now_ns());
        const auto status = w.write(r, base, "j" + std::to_string(++job), lease->fence.value());
        (void)c.release(res(r), lease->owner);
        return status;
    };

    for (int i = 0; i < before_restart; ++i) ASSERT_EQ(round(), TargetStatus::applied);
    const auto last_before = target->last_fence(r);
    ASSERT_EQ(last_before, static_cast<std::uint64_t>(before_restart));

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
    const auto recovery_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - restarted).count();
    ASSERT_EQ(status, TargetStatus::applied) << "writes never succeeded again";
    auto info = c.inspect(res(r));
    ASSERT_TRUE(info);

    if (fencing()) {
        EXPECT_EQ(rejected, before_restart) << "every regressed fence up to the old last one is refused";
        EXPECT_EQ(attempts, before_restart + 1);
        EXPECT_EQ(target->last_fence(r), last_before + 1);
    } else {
        EXPECT_EQ(attempts, 1) << "unfenced, the first regressed write gets through";
    }
    const Report report = check_history();
    expect_verdict(report);
    std::printf("after the restart: %d attempts, %d refused as stale, %lld ms until a write succeeded\n", attempts,
                rejected, static_cast<long long>(recovery_ms));
    summary("redis_restart_no_persistence")
        .add("protection", "target fence check")
        .report(report)
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
