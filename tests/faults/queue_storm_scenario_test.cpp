// A contention storm through the queue runtime: 50 jobs on one record, 8 worker threads (each
// its own lock client), every job one lock attempt and a delayed requeue when contended. The
// checker must find the record's accepted fences strictly increasing, no two holds
// overlapping, each job's append exactly once and every job acknowledged within the bound.
// Negative control: the jobs lock a resource of their own instead of the record (the wrong lock
// granularity) and the store does not check fences: holds overlap, fences from unrelated
// counters are accepted out of order, and on PostgreSQL concurrent appends are lost.
#include "faults/queue_scenario.hpp"

namespace fencelock::faults {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using test_support::eventually;

using QueueStorm = QueueScenario;

TEST_P(QueueStorm, FiftyJobsOnOneRecordCommitInFenceOrder) {
    const std::string record = "qstorm:record";
    constexpr int workers = 8, jobs_n = 50;
    constexpr auto bound = 30s;
    // The record's guard row exists before the first job (the negative control's jobs write it
    // without locking it, so nothing else would create it).
    ASSERT_TRUE(store().create_resource(res(record)));
    for (int i = 0; i < jobs_n; ++i) {
        const std::string key = "job-" + std::to_string(i);
        enqueue(fencing() ? record : "qstorm:" + key, key);
    }
    const auto t0 = Clock::now();
    std::vector<std::unique_ptr<WorkerThread>> pool;
    for (int w = 0; w < workers; ++w)
        pool.push_back(start_worker("w" + std::to_string(w), {.record = record}, scenario_worker(5s, 30s, nullptr)));
    const bool drained = eventually([&] { return book->open() == 0; }, bound);
    const auto total_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
    std::uint64_t contention = 0;
    for (auto& w : pool) contention += w->stop().contention_retries;
    pool.clear();

    const auto h = history();
    std::int64_t max_job_ms = 0;
    for (const auto& op : h.ops)
        if (op.kind == OpKind::job && op.outcome != Outcome::invoke)
            max_job_ms = std::max<std::int64_t>(max_job_ms, (op.complete_ns - op.invoke_ns) / 1'000'000);
    if (fencing()) {
        EXPECT_TRUE(drained) << book->open() << " jobs still open";
        EXPECT_EQ(stats().counter("completed"), static_cast<std::uint64_t>(jobs_n));
        EXPECT_EQ(h.accepted.size(), static_cast<std::size_t>(jobs_n)) << "one accepted write per job";
    }
    const Report report = check_history({.completion_bound = bound});
    expect_verdict(report);
    summary("queue_contention_storm")
        .add("protection", "per-record lock + store fence check")
        .report(report)
        .linearizability(lin)
        .add("workers", workers)
        .add("jobs", jobs_n)
        .add("jobs_completed", static_cast<std::int64_t>(stats().counter("completed")))
        .add("contention_retries", static_cast<std::int64_t>(contention))
        .add("max_job_ms", max_job_ms)
        .add("total_ms", total_ms)
        .print();
}

INSTANTIATE_TEST_SUITE_P(Faults, QueueStorm, ::testing::ValuesIn(stores_only()), mode_name);

}  // namespace
}  // namespace fencelock::faults
