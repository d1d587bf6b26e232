// A contention storm: 50 jobs on one resource from 8 threads, each acquiring with full-jitter
// backoff. Every job must finish within the bound, no two holders may overlap, accepted fences
// must strictly increase and the final record must hold each job's append exactly once.
// Negative control: the same jobs without the lock on an unfenced target; the first round
// reads together (a barrier) and then writes, so appends are lost and holds overlap.
#include <atomic>
#include <barrier>
#include <set>
#include <thread>

#include "faults/locked_job.hpp"

namespace fencelock::faults {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

using ContentionStorm = ScenarioTest;

TEST_P(ContentionStorm, FiftyJobsOnOneResourceFinishInOrder) {
    const std::string r = "storm:record";
    constexpr int threads = 8, jobs = 50;
    constexpr auto bound = 20s;
    std::atomic<int> next_job{0};
    std::atomic<std::int64_t> max_job_us{0};
    LockedJobCounts counts;
    std::barrier first_round(threads);
    const auto t0 = Clock::now();
    {
        std::vector<std::jthread> pool;
        for (int t = 0; t < threads; ++t)
            pool.emplace_back([&, t] {
                auto c = client({.pool_size = 1});
                auto rec = recorder("t" + std::to_string(t));
                RmwWorker w(*rec, *target);
                bool first = true;
                for (int job; (job = next_job++) < jobs; first = false) {
                    const std::string key = "J" + std::to_string(job);
                    const auto job_id = rec->invoke(OpKind::job, r, 0, {}, key);
                    const auto begun = Clock::now();
                    bool done = false;
                    if (fencing()) {
                        done = run_locked_job(c, *rec, w, r, key,
                                              {.lease = 2s, .wait = bound, .backoff = {.base = 5ms, .max = 200ms}},
                                              counts);
                    } else {
                        // No lock: every worker believes it may write.
                        const auto start = now_ns();
                        const std::string base = w.read(r, 0);
                        if (first) first_round.arrive_and_wait();
                        rec->hold(r, 0, start, now_ns());
                        done = w.write(r, base, key, 0) == TargetStatus::applied;
                    }
                    rec->complete(job_id, done ? Outcome::ok : Outcome::fail);
                    const auto us = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - begun).count();
                    std::int64_t cur = max_job_us.load();
                    while (us > cur && !max_job_us.compare_exchange_weak(cur, us)) {
                    }
                }
            });
    }
    const auto total_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
    const auto h = history();
    std::int64_t jobs_ok = 0;
    for (const auto& op : h.ops)
        if (op.kind == OpKind::job && op.outcome == Outcome::ok) ++jobs_ok;
    if (fencing()) {
        EXPECT_EQ(jobs_ok, jobs);
        auto info = client().inspect(res(r));
        ASSERT_TRUE(info);
        std::set<std::uint64_t> fences;
        std::size_t grants = 0;
        for (const auto& op : h.ops)
            if (op.kind == OpKind::acquire && op.outcome == Outcome::ok) ++grants, fences.insert(op.fence);
        EXPECT_GE(grants, static_cast<std::size_t>(jobs));
        EXPECT_EQ(fences.size(), grants) << "one fence per grant";
        ASSERT_FALSE(fences.empty());
        EXPECT_EQ(info->last_fence.value(), *fences.rbegin()) << "the counter is the last fence issued";
    }
    const Report report = check_history({.completion_bound = bound});
    expect_verdict(report);
    expect_linearizability_caught();
    summary("contention_storm")
        .add("protection", "lock + target fence check")
        .report(report)
        .linearizability(lin)
        .add("threads", threads)
        .add("jobs", jobs)
        .add("jobs_ok", jobs_ok)
        .add("acquire_attempts", counts.attempts.load())
        .add("max_job_ms", max_job_us.load() / 1000)
        .add("total_ms", total_ms)
        .print();
}

INSTANTIATE_TEST_SUITE_P(Faults, ContentionStorm, ::testing::ValuesIn(all_backends()), mode_name);

}  // namespace
}  // namespace fencelock::faults
