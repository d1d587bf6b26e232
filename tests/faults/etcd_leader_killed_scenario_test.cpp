// The etcd leader killed under load: a 3-member cluster, 4 threads running 40 jobs on one
// resource (acquire, read-modify-write with the fence, release), their URL naming the leader
// first so that they talk to it. Once 10 jobs are done the leader gets SIGKILL (the clients'
// connections break and move to the next member while a new leader is elected); once 25 are
// done it is restarted and rejoins. Fences come from Raft
// revisions, which a new leader never reissues: every grant must get a fence of its own, the
// target must accept them in rising order, no two holds may overlap and every job must finish
// exactly once. Negative control: the same jobs without the lock on an unfenced target (the
// first round reads together, then writes), so appends are lost and holds overlap.
#include <atomic>
#include <barrier>
#include <set>
#include <thread>

#include "faults/locked_job.hpp"
#include "local_servers/etcd_cluster.hpp"

namespace fencelock::faults {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

class EtcdLeaderKilled : public ScenarioTest {
protected:
    void SetUp() override {
        ScenarioTest::SetUp();
        cluster = std::make_unique<local::EtcdCluster>();
    }
    std::unique_ptr<local::EtcdCluster> cluster;
};

TEST_P(EtcdLeaderKilled, FencesKeepRisingAndEveryJobFinishesOnce) {
    const std::string r = "leader:record";
    constexpr int threads = 4, jobs = 40;
    constexpr auto bound = 30s;
    std::atomic<int> next_job{0}, jobs_done{0};
    LockedJobCounts counts;
    std::barrier first_round(threads);
    const std::size_t leader = cluster->wait_for_leader(10s);
    std::string url = "etcd://" + cluster->member(leader).endpoint();
    for (std::size_t i = 0; i < cluster->members(); ++i)
        if (i != leader) url += "," + cluster->member(i).endpoint();
    {
        std::vector<std::jthread> pool;
        for (int t = 0; t < threads; ++t)
            pool.emplace_back([&, t] {
                auto c = client({.connect_timeout = 500ms, .command_timeout = 1s}, url);
                auto rec = recorder("t" + std::to_string(t));
                RmwWorker w(*rec, *target);
                bool first = true;
                for (int job; (job = next_job++) < jobs; first = false) {
                    const std::string key = "J" + std::to_string(job);
                    const auto job_id = rec->invoke(OpKind::job, r, 0, {}, key);
                    bool done = false;
                    if (fencing()) {
                        done = run_locked_job(c, *rec, w, r, key,
                                              {.lease = 2s, .wait = bound, .backoff = {.base = 5ms, .max = 200ms}},
                                              counts);
                    } else {
                        const auto start = now_ns();
                        const std::string base = w.read(r, 0);
                        if (first) first_round.arrive_and_wait();
                        rec->hold(r, 0, start, now_ns());
                        done = w.write(r, base, key, 0) == TargetStatus::applied;
                    }
                    rec->complete(job_id, done ? Outcome::ok : Outcome::fail);
                    ++jobs_done;
                }
            });

        // The faults, from this thread, at points of the run rather than at times.
        if (fencing()) {
            ASSERT_TRUE(test_support::eventually([&] { return jobs_done >= 10; }, 60s));
            ASSERT_EQ(cluster->leader_index(), leader) << "the leader changed before the kill";
            cluster->member(leader).kill_hard();
            cluster->wait_for_new_leader(leader, 10s);
            ASSERT_TRUE(test_support::eventually([&] { return jobs_done >= 25; }, 60s));
            cluster->member(leader).restart();
        }
    }

    const auto h = history();
    std::int64_t jobs_ok = 0;
    std::set<std::uint64_t> fences;
    std::size_t grants = 0;
    for (const auto& op : h.ops) {
        if (op.kind == OpKind::job && op.outcome == Outcome::ok) ++jobs_ok;
        if (op.kind == OpKind::acquire && op.outcome == Outcome::ok) ++grants, fences.insert(op.fence);
    }
    if (fencing()) {
        EXPECT_EQ(jobs_ok, jobs) << "a job was lost";
        EXPECT_EQ(fences.size(), grants) << "one fence per grant, none issued twice";
    }
    const Report report = check_history({.completion_bound = bound});
    expect_verdict(report);
    expect_linearizability_caught();
    summary("etcd_leader_killed")
        .add("protection", "etcd lock + target fence check")
        .add("coordinator", "etcd (3 members)")
        .report(report)
        .linearizability(lin)
        .add("jobs", jobs)
        .add("jobs_ok", jobs_ok)
        .add("grants", static_cast<std::int64_t>(grants))
        .add("acquire_attempts", counts.attempts.load())
        .add("attempts_refused_or_failed", counts.unsuccessful_attempts.load())
        .add("first_fence", fences.empty() ? 0 : static_cast<std::int64_t>(*fences.begin()))
        .add("last_fence", fences.empty() ? 0 : static_cast<std::int64_t>(*fences.rbegin()))
        .print();
}

INSTANTIATE_TEST_SUITE_P(Faults, EtcdLeaderKilled, ::testing::ValuesIn(no_postgres()), mode_name);

}  // namespace
}  // namespace fencelock::faults
