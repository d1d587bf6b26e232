#include "faults/failover_scenario.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <vector>

#include "faults/store_target.hpp"

namespace fencelock::faults {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using test_support::eventually;

constexpr auto round_lease = 2s;
// Outlives the whole failover: the promoted master must keep refusing K's resource.
constexpr auto kept_lease = 15s;
constexpr int replicated_rounds = 10, lost_writes = 2, lost_grants = 2;
constexpr int replicated_jobs = 3, unreplicated_jobs = 2;
// A correctness bound with a wide margin, not a timing assertion: the promoted master must
// serve a write the store accepts within it (measured figure in the summary).
constexpr auto first_write_bound = 10s;

std::int64_t ms_since(Clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t).count();
}

}  // namespace

void FailoverScenario::SetUp() {
    ScenarioTest::SetUp();
    if (HasFatalFailure()) return;
    // What the control turns off is the fence source; the store keeps checking fences.
    if (!fencing()) target = StoreTarget::open(target_location, true);
    fences = fencing() ? fencelock_fences() : naive_fences();
    topology = make_topology();
    r = topology->place("failover:r");
    kept = topology->place("failover:kept");
    queue = topology->place("failover");
}

void FailoverScenario::TearDown() {
    topology.reset();
    ScenarioTest::TearDown();
}

/// One ownership of `r` on the server at `port`: acquire, read, check the lease, write
/// `element` (no write when empty), release.
std::optional<FailoverScenario::Round> FailoverScenario::round(Recorder& rec, std::uint16_t port,
                                                               const std::string& element) {
    auto lease = record_acquire(rec, r, [&] { return fences->try_acquire(port, r, round_lease); });
    if (!lease) return std::nullopt;
    Round out{.fence = lease->fence.value(), .write = std::nullopt};
    if (!element.empty()) {
        RmwWorker worker(rec, *target);
        const auto start = now_ns();
        const std::string base = worker.read(r, out.fence);
        if (still_valid(*lease)) {
            rec.hold(r, out.fence, start, now_ns());
            out.write = worker.write(r, base, element, out.fence);
        }
    }
    fences->release(port, *lease);
    return out;
}

/// Enqueues `n` jobs named `prefix`0.. on the server at `port`; false when one is refused.
bool FailoverScenario::enqueue(std::uint16_t port, const std::string& prefix, int n) {
    auto q = queue_at(port);
    for (int i = 0; i < n; ++i)
        if (!q.enqueue({.resource = res(r), .idempotency_key = prefix + std::to_string(i)})) return false;
    return true;
}

/// Jobs waiting on the server at `port` (-1 when it cannot say).
std::int64_t FailoverScenario::jobs_ready(std::uint16_t port) {
    auto stats = queue_at(port).stats();
    return stats ? static_cast<std::int64_t>(stats->ready) : -1;
}

JobQueue FailoverScenario::queue_at(std::uint16_t port) const {
    auto q =
        JobQueue::create({.queue = queue, .endpoint = *parse_redis_url("redis://127.0.0.1:" + std::to_string(port))});
    if (!q) throw std::invalid_argument("QueueOptions." + q.error().field + ": " + q.error().message);
    return std::move(*q);
}

std::uint64_t FailoverScenario::highest_fence_granted_before(std::int64_t t_ns) {
    std::uint64_t highest = 0;
    for (const auto& op : history().ops)
        if (op.kind == OpKind::acquire && op.outcome == Outcome::ok && op.complete_ns < t_ns)
            highest = std::max(highest, op.fence);
    return highest;
}

void FailoverScenario::run(const std::string& scenario) {
    const auto stalled_lease = topology->stalled_lease();
    local::RedisServer& old_master = topology->master();
    const std::uint16_t old_port = old_master.port();
    auto pre = recorder("pre"), lost = recorder("lost"), x_rec = recorder("X"), k_rec = recorder("K");
    auto post = recorder("post"), empty = recorder("empty");

    // 1. The replicated history.
    for (int i = 0; i < replicated_rounds; ++i) {
        const auto done = round(*pre, old_port, "pre" + std::to_string(i));
        ASSERT_TRUE(done && done->write == TargetStatus::applied) << "replicated round " << i;
    }
    const auto k_lease = record_acquire(*k_rec, kept, [&] { return fences->try_acquire(old_port, kept, kept_lease); });
    ASSERT_TRUE(k_lease) << "K found no free lock";
    const auto k_start = now_ns();
    ASSERT_TRUE(enqueue(old_port, "job-replicated-", replicated_jobs));
    ASSERT_TRUE(topology->replicated()) << "the replica did not acknowledge the replicated history";

    // 2. What the master accepts from now on is lost.
    const auto cut_ns = now_ns();
    topology->cut_replication();
    for (int i = 0; i < lost_writes + lost_grants; ++i) {
        const auto done = round(*lost, old_port, i < lost_writes ? "lost" + std::to_string(i) : "");
        ASSERT_TRUE(done) << "lost round " << i;
        if (i < lost_writes) {
            ASSERT_EQ(done->write, TargetStatus::applied) << "lost round " << i;
        }
    }
    ASSERT_TRUE(enqueue(old_port, "job-unreplicated-", unreplicated_jobs));
    const auto x_lease = record_acquire(*x_rec, r, [&] { return fences->try_acquire(old_port, r, stalled_lease); });
    ASSERT_TRUE(x_lease) << "X found no free lock";
    const auto x_fence = x_lease->fence.value();
    RmwWorker x(*x_rec, *target);
    const auto x_start = now_ns();
    const std::string x_base = x.read(r, x_fence);
    ASSERT_TRUE(still_valid(*x_lease));
    auto x_checked = now_ns();

    // 3. The failover.
    topology->kill_master();
    const auto killed = Clock::now();
    const std::uint16_t new_port = topology->wait_for_promotion(30s);
    const auto promotion_ms = ms_since(killed);
    const auto promoted_at = Clock::now();
    const auto promoted_ns = now_ns();

    // 4. New holders until a write is accepted; each refused one burned an ownership.
    std::vector<std::uint64_t> post_fences;
    std::int64_t first_write_ms = -1;
    for (int i = 0; i < 8 && first_write_ms < 0; ++i) {
        const auto done = round(*post, new_port, "post" + std::to_string(i));
        ASSERT_TRUE(done) << "no lease on the promoted master";
        post_fences.push_back(done->fence);
        if (done->write == TargetStatus::applied) first_write_ms = ms_since(promoted_at);
    }
    ASSERT_GE(first_write_ms, 0) << "no write accepted after the promotion";
    // X's lease never reached the promoted master, so X may still believe in it now.
    if (still_valid(*x_lease)) x_checked = now_ns();
    x_rec->hold(r, x_fence, x_start, x_checked);
    // K's lease did reach it: the promoted master must refuse K's resource.
    const std::int64_t jobs_kept = jobs_ready(new_port);
    const auto taker = record_acquire(*post, kept, [&] { return fences->try_acquire(new_port, kept, round_lease); });
    if (taker) post->hold(kept, taker->fence.value(), now_ns(), now_ns());
    if (still_valid(*k_lease)) k_rec->hold(kept, k_lease->fence.value(), k_start, now_ns());

    // 5. X wakes past its lease and writes with its pre-failover fence.
    ASSERT_TRUE(eventually([&] { return !still_valid(*x_lease); }, stalled_lease + 1s));
    const TargetStatus x_status = x.write(r, x_base, "X", x_fence);

    // 6. The old master back without persistence: empty, and a master until demoted.
    const auto restart_ns = now_ns();
    old_master.start();
    const auto restarted = Clock::now();
    const auto from_empty = round(*empty, old_port, "empty");
    const bool demoted = eventually([&] { return old_master.cli({"ROLE"}).starts_with("slave"); }, 60s);
    const auto empty_master_ms = ms_since(restarted);

    // Leases granted while replication was cut, and by the empty master, never reached the
    // promoted master: exclusion is checked for all others.
    const CheckOptions options{
        .leases = true,
        .not_replicated = {{cut_ns, promoted_ns}, {restart_ns, std::numeric_limits<std::int64_t>::max()}}};
    const Report report = check_history(options);
    expect_verdict(report);
    const auto overlaps_all = check_exclusion(history().ops).size();
    const auto before_failover = highest_fence_granted_before(promoted_ns);
    const auto before_restart = highest_fence_granted_before(restart_ns);
    EXPECT_TRUE(demoted) << "the restarted old master was never demoted";
    EXPECT_EQ(jobs_kept, replicated_jobs) << "the promoted master lost a replicated job, or kept an unreplicated one";
    EXPECT_FALSE(taker) << "the promoted master granted a lease that had reached it to a second owner";
    if (fencing()) {
        EXPECT_GT(post_fences.front(), before_failover) << "the first fence after the promotion is not the highest";
        EXPECT_EQ(post_fences.size(), 1u) << "the first write after the promotion was refused";
        EXPECT_LT(first_write_ms, std::chrono::milliseconds(first_write_bound).count());
        EXPECT_EQ(x_status, TargetStatus::stale) << "X's pre-failover fence got in after the new holders'";
        if (from_empty) {
            EXPECT_GT(from_empty->fence, before_restart) << "the empty master issued a fence from before";
            EXPECT_EQ(from_empty->write, TargetStatus::applied);
        }
    } else {
        EXPECT_FALSE(report.lease_order.empty()) << "the control's stale write was not caught";
        EXPECT_FALSE(report.unique_fence.empty()) << "the control issued no fence twice";
        expect_linearizability_caught();  // X's accepted write wipes the post-failover appends
    }

    std::printf(
        "promotion %lld ms after the kill; first accepted write %lld ms after it (%zu attempts); "
        "fences: highest before %llu, first after %llu; X's write %s; empty master %lld ms, fence %llu\n",
        static_cast<long long>(promotion_ms), static_cast<long long>(first_write_ms), post_fences.size(),
        static_cast<unsigned long long>(before_failover), static_cast<unsigned long long>(post_fences.front()),
        std::string(to_string(x_status)).c_str(), static_cast<long long>(empty_master_ms),
        static_cast<unsigned long long>(from_empty ? from_empty->fence : 0));
    summary(scenario)
        .add("topology", std::string(topology->name()))
        .add("protection", std::string(fences->describe()))
        .report(report)
        .linearizability(lin)
        .add("v_unique_fence", static_cast<std::int64_t>(report.unique_fence.size()))
        .add("v_lease_order", static_cast<std::int64_t>(report.lease_order.size()))
        .add("promotion_ms", promotion_ms)
        .add("first_accepted_write_after_promotion_ms", first_write_ms)
        .add("attempts_until_accepted", static_cast<std::int64_t>(post_fences.size()))
        .add("highest_fence_before", static_cast<std::int64_t>(before_failover))
        .add("first_fence_after", static_cast<std::int64_t>(post_fences.front()))
        .add("stalled_write", std::string(to_string(x_status)))
        .add("unreplicated_overlaps", static_cast<std::int64_t>(overlaps_all - report.exclusion.size()))
        .flag("replicated_lease_kept", !taker)
        .add("jobs_replicated_kept", jobs_kept)
        .add("jobs_acknowledged_unreplicated_lost", replicated_jobs + unreplicated_jobs - jobs_kept)
        .add("empty_master_ms", empty_master_ms)
        .add("empty_master_fence", static_cast<std::int64_t>(from_empty ? from_empty->fence : 0))
        .add("empty_master_write",
             from_empty && from_empty->write ? std::string(to_string(*from_empty->write)) : std::string("none"))
        .print();
}

}  // namespace fencelock::faults
