// A lost lease must be reported at its safe-until moment, not when a renewal stuck on a
// stalled network finally times out. The keeper's connection goes through the fault proxy,
// whose replies are held (the renewal is sent, Redis runs it, the reply never arrives); a
// competitor talks to Redis directly and takes the lock as soon as Redis lets the lease go.
// The command timeout is longer than the lease, which once delayed the loss past the moment
// the competitor held the lock. Each test asserts order (loss reported before the competitor
// acquired), never wall time.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "faults/fault_proxy.hpp"
#include "fencelock/client.hpp"
#include "local_servers/child_process.hpp"
#include "local_servers/redis_server.hpp"
#include "support/eventually.hpp"

namespace fencelock::faults {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using local::RedisServer;

LockClient client_at(const std::string& url, std::chrono::milliseconds timeout, double drift = 0.01) {
    auto c = LockClient::create({.endpoint = *parse_redis_url(url),
                                 .connect_timeout = timeout,
                                 .command_timeout = timeout,
                                 .clock_drift_factor = drift});
    EXPECT_TRUE(c.has_value());
    return std::move(*c);
}

std::int64_t ms_between(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(b - a).count();
}

TEST(LateLoss, LossFiresAtSafeUntilWhileARenewalIsStuckForTheWholeCommandTimeout) {
    RedisServer redis;
    FaultProxy proxy(redis.port());
    // A 10 % drift margin keeps the gap between safe_until and the Redis expiry at 100 ms of
    // the 1 s lease: wide against scheduling noise, far shorter than the 5 s command timeout.
    auto holder = client_at(proxy.url(), 5s, 0.1);
    auto competitor = client_at(redis.url(), 1s);
    const auto r = *ResourceName::make("late-loss");

    std::atomic<bool> lost{false};
    std::atomic<Clock::rep> lost_at{0};
    auto held = holder.hold(r, {.lease = 1s}, {.on_lost = [&](const LeaseLoss&) {
                                lost_at = Clock::now().time_since_epoch().count();
                                lost = true;
                            }});
    ASSERT_TRUE(held && held->acquired());
    const auto stalled = Clock::now();
    proxy.hold_replies();

    auto taken = competitor.acquire(r, {.lease = 10s, .wait = 10s});
    const bool lost_first = lost.load();
    const auto acquired_at = Clock::now();
    ASSERT_TRUE(taken && taken->acquired());
    EXPECT_TRUE(lost_first) << "the competitor held the lock before the holder was told its lease was gone";
    EXPECT_TRUE(held->lease->stop_token().stop_requested());
    EXPECT_FALSE(held->lease->valid());
    ASSERT_TRUE(test_support::eventually([&] { return lost.load(); }));
    std::cout << "[figures] stall to loss " << ms_between(stalled, Clock::time_point(Clock::duration(lost_at.load())))
              << " ms, stall to competitor acquired " << ms_between(stalled, acquired_at)
              << " ms (lease 1000 ms, command timeout 5000 ms)\n";
    proxy.pass();
}

// release() does not wait for a renewal stuck on the wire (it used to, for the whole command
// timeout, and from inside on_lost that stalled every other lease's loss report): its
// compare-and-delete reaches Redis while the renewal's reply is still held.
TEST(LateLoss, ReleaseDoesNotWaitForAStuckRenewal) {
    RedisServer redis;
    FaultProxy proxy(redis.port());
    auto holder = client_at(proxy.url(), 20s);
    const auto r = *ResourceName::make("stuck-release");
    // Acquire and release once first, so the release script is cached: a NOSCRIPT reply held
    // by the proxy would stop the release for another reason.
    auto warm = holder.try_acquire(*ResourceName::make("warm-up"), {.lease = 10s});
    ASSERT_TRUE(warm && warm->acquired());
    ASSERT_TRUE(holder.release(*ResourceName::make("warm-up"), warm->lease->owner));
    // A lease far longer than the wait below: only the release can remove the key in time.
    auto held = holder.hold(r, {.lease = 60s}, {.renew_every = 100ms});
    ASSERT_TRUE(held && held->acquired());
    proxy.hold_replies();
    // A renewal went out and Redis answered it: its reply is the one held.
    ASSERT_TRUE(test_support::eventually([&] { return proxy.counters().held_down > 0; }));
    std::jthread releasing([&] { (void)held->lease->release(); });
    EXPECT_TRUE(test_support::eventually(
        [&] {
            return redis.cli({"EXISTS", "lock:{stuck-release}"}) == "0";
        },
        10s))
        << "the release waited for the stuck renewal";
    proxy.pass();
}

// on_lost never runs after release() returned: what it captured may be gone by then.
TEST(LateLoss, OnLostNeverRunsAfterReleaseReturned) {
    RedisServer redis;
    auto holder = client_at(redis.url(), 1s);
    const auto r = *ResourceName::make("late-callback");
    std::atomic<bool> stop_seen{false}, release_returned{false}, ran_after_release{false}, on_lost_done{false};
    std::mutex m;
    std::condition_variable cv;
    auto held = holder.hold(r, {.lease = 300ms}, {.on_lost = [&](const LeaseLoss&) {
                                // Give release() every chance to return first.
                                std::unique_lock lock(m);
                                cv.wait_for(lock, 500ms, [&] { return release_returned.load(); });
                                ran_after_release = release_returned.load();
                                on_lost_done = true;
                            }});
    ASSERT_TRUE(held && held->acquired());
    std::stop_callback on_stop(held->lease->stop_token(), [&] {
        stop_seen = true;
        cv.notify_all();
    });
    redis.cli({"DEL", "lock:{late-callback}"});  // the next renewal answers not_owner
    {
        std::unique_lock lock(m);
        ASSERT_TRUE(cv.wait_for(lock, 10s, [&] { return stop_seen.load(); }));
    }
    (void)held->lease->release();
    release_returned = true;
    cv.notify_all();
    ASSERT_TRUE(test_support::eventually([&] { return on_lost_done.load(); })) << "on_lost never ran";
    EXPECT_FALSE(ran_after_release.load()) << "on_lost ran after release() had returned";
}

#ifdef FENCELOCK_CLI
// `fencelock --timeout 5s run R --lease 3s`: the command must get its SIGTERM before anyone
// else can hold R. Its trap writes a marker; when the competitor's acquire returns, the
// marker must already exist.
TEST(LateLoss, RunSignalsItsCommandBeforeACompetitorCanAcquire) {
    RedisServer redis;
    FaultProxy proxy(redis.port());
    auto competitor = client_at(redis.url(), 1s);
    const auto r = *ResourceName::make("late-run");
    const auto dir = std::filesystem::temp_directory_path() / ("late-run-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const std::string started = (dir / "started").string(), signalled = (dir / "signalled").string();

    // `wait` returns at once when a trapped signal arrives (POSIX), so the marker is written
    // as soon as the signal is delivered.
    const std::string script =
        "trap 'echo x > " + signalled + "; exit 0' TERM; echo x > " + started + "; sleep 60 & wait";
    const pid_t run = local::start_process({FENCELOCK_CLI, "--redis", proxy.url(), "--timeout", "5s", "run", "late-run",
                                            "--lease", "3s", "--grace", "1s", "--", "sh", "-c", script},
                                           (dir / "out").string(), (dir / "err").string());
    ASSERT_TRUE(test_support::eventually([&] { return std::filesystem::exists(started); }));
    proxy.hold_replies();
    const auto stalled = Clock::now();

    auto taken = competitor.acquire(r, {.lease = 10s, .wait = 20s});
    const bool signalled_first = std::filesystem::exists(signalled);
    const auto acquired_at = Clock::now();
    ASSERT_TRUE(taken && taken->acquired());
    EXPECT_TRUE(signalled_first) << "the competitor held the lock while run's command had not been signalled";
    proxy.pass();
    EXPECT_EQ(local::wait_process(run), 76) << "run reports a lost lease";
    std::cout << "[figures] stall to competitor acquired " << ms_between(stalled, acquired_at)
              << " ms (lease 3000 ms, --timeout 5s)\n";
    std::filesystem::remove_all(dir);
}

// The same stall with a command that ignores SIGTERM and keeps writing: its --grace must end
// before its lease can, so it is killed (SIGKILL at safe-until, SIGTERM a grace before) before
// the competitor's grant. It used to get SIGTERM at safe-until and SIGKILL a whole grace later,
// and wrote on while the next holder ran.
TEST(LateLoss, ACommandIgnoringSigtermIsGoneBeforeACompetitorCanAcquire) {
    RedisServer redis;
    FaultProxy proxy(redis.port());
    auto competitor = client_at(redis.url(), 1s);
    const auto r = *ResourceName::make("late-stubborn");
    const auto dir = std::filesystem::temp_directory_path() / ("late-stubborn-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const std::string started = (dir / "started").string(), ticks = (dir / "ticks").string();
    // A tick (wall clock, ns) every 20 ms until killed; SIGTERM is ignored. The kill comes at
    // safe-until, 1 % (the drift margin) of the 8 s lease before Redis lets the lease go: 80 ms
    // for fencelock's wake-up to be late on a loaded machine without failing the test.
    const std::string script =
        "trap '' TERM; echo x > " + started + "; while :; do date +%s%N >> " + ticks + "; sleep 0.02; done";
    const pid_t run =
        local::start_process({FENCELOCK_CLI, "--redis", proxy.url(), "--timeout", "5s", "run", "late-stubborn",
                              "--lease", "8s", "--grace", "2s", "--", "sh", "-c", script},
                             (dir / "out").string(), (dir / "err").string());
    ASSERT_TRUE(test_support::eventually([&] { return std::filesystem::exists(started); }));
    proxy.hold_replies();

    auto taken = competitor.acquire(r, {.lease = 10s, .wait = 20s});
    const auto granted_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    ASSERT_TRUE(taken && taken->acquired());
    proxy.pass();
    EXPECT_EQ(local::wait_process(run), 76) << "run reports a lost lease";
    std::ifstream in(ticks);
    long long last = 0, count = 0;
    for (long long t = 0; in >> t; ++count) last = t;
    ASSERT_GT(count, 10) << "the command never ran: proves nothing";
    EXPECT_LT(last, granted_ns) << "the command wrote " << (last - granted_ns) / 1'000'000
                                << " ms after the competitor was granted the lock";
    std::cout << "[figures] stubborn command's last tick " << (granted_ns - last) / 1'000'000
              << " ms before the competitor's grant (lease 8000 ms, --grace 2s)\n";
    std::filesystem::remove_all(dir);
}
#endif

}  // namespace
}  // namespace fencelock::faults
