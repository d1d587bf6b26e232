// Mutual exclusion under load: 32 threads in this process and 4 hammer processes take turns on
// 4 resources. Each holder records its critical section on the machine-wide monotonic clock;
// the merged history must show no overlap and strictly increasing fences per resource.
#include <fstream>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "integration/hold_history.hpp"
#include "integration/lock_fixture.hpp"
#include "local_servers/child_process.hpp"

namespace fencelock::test_support {
namespace {

using namespace std::chrono_literals;
using local::start_process;
using local::wait_process;

TEST_F(LockTest, ThirtyTwoThreadsAndFourProcessesNeverOverlap) {
    const std::vector<std::string> names{"res:a", "res:b", "res:c", "res:d"};
    constexpr int threads = 32, processes = 4;
    constexpr std::int64_t run_ms = 3000;

    std::vector<pid_t> children;
    std::vector<std::string> files;
    for (int p = 0; p < processes; ++p) {
        files.push_back(::testing::TempDir() + "hammer-" + std::to_string(::getpid()) + "-" + std::to_string(p));
        std::vector<std::string> argv{HAMMER_BIN, client_url(), std::to_string(run_ms), files.back()};
        argv.insert(argv.end(), names.begin(), names.end());
        children.push_back(start_process(argv));
    }

    std::mutex m;
    std::vector<Hold> holds;
    int failures = 0;
    {
        std::vector<std::jthread> workers;
        for (int t = 0; t < threads; ++t) {
            workers.emplace_back([&, t] {
                auto c = client({.pool_size = 1});
                std::mt19937 rng(static_cast<unsigned>(t));
                const auto until = monotonic_ns() + run_ms * 1'000'000;
                while (monotonic_ns() < until) {
                    const auto r = resource(names[rng() % names.size()]);
                    auto got = c.acquire(r, {.lease = 10s, .wait = 5s, .backoff = {.base = 1ms, .max = 10ms}});
                    if (!got || !got->acquired()) {
                        std::lock_guard lock(m);
                        ++failures;
                        continue;
                    }
                    Hold h{r.str(), got->lease->fence.value(), monotonic_ns(), 0, "thread-" + std::to_string(t)};
                    std::this_thread::yield();
                    h.end_ns = monotonic_ns();
                    {
                        std::lock_guard lock(m);
                        holds.push_back(h);
                    }
                    auto released = c.release(r, got->lease->owner);
                    EXPECT_TRUE(released && *released == ReleaseStatus::released);
                }
            });
        }
    }
    EXPECT_EQ(failures, 0);
    for (int p = 0; p < processes; ++p) {
        EXPECT_EQ(wait_process(children[static_cast<std::size_t>(p)]), 0) << "hammer " << p << " failed";
        std::ifstream in(files[static_cast<std::size_t>(p)]);
        auto process_holds = read_holds(in, "process-" + std::to_string(p));
        EXPECT_GT(process_holds.size(), 0u) << "hammer " << p << " never got a lock";
        holds.insert(holds.end(), process_holds.begin(), process_holds.end());
        std::remove(files[static_cast<std::size_t>(p)].c_str());
    }

    ASSERT_GT(holds.size(), 200u) << "too few critical sections to say anything";
    const auto violations = check_holds(holds);
    for (const auto& v : violations) ADD_FAILURE() << v;
    // Every fence went to exactly one holder, and the counter is the last one issued.
    for (const auto& name : names) {
        auto info = client().inspect(resource(name));
        ASSERT_TRUE(info);
        std::set<std::uint64_t> fences;
        std::size_t grants = 0;
        for (const Hold& h : holds)
            if (h.resource == name) ++grants, fences.insert(h.fence);
        EXPECT_EQ(fences.size(), grants) << name << ": a fence was issued twice";
        ASSERT_FALSE(fences.empty()) << name;
        EXPECT_EQ(info->last_fence.value(), *fences.rbegin()) << name;
    }
    std::printf("mutual exclusion: %zu critical sections, %zu violations\n", holds.size(), violations.size());
}

}  // namespace
}  // namespace fencelock::test_support
