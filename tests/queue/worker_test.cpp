// The runtime against real Redis and both store backends: deduplication, hot-resource
// exclusion with exact retry accounting, dead-lettering, lease loss, shutdown, fail-closed.
#include <atomic>
#include <mutex>
#include <thread>

#include "queue_fixture.hpp"

namespace fencelock::test_support {
namespace {

using std::chrono::milliseconds;
using namespace std::chrono_literals;
using local::free_port;

WorkerOptions fast_worker(std::size_t concurrency = 1) {
    return WorkerOptions{.concurrency = concurrency,
                         .processing = {.lease = milliseconds(5000), .retry = fast_policies()},
                         .visibility_timeout = milliseconds(30'000),
                         .block = milliseconds(100),
                         .promote_every = milliseconds(20),
                         .shutdown_grace = milliseconds(5000)};
}

TEST_P(QueueTest, DuplicateEnqueueAndRedeliveryApplyOneEffect) {
    const auto first = enqueue("order-1", "invoice-1");
    const auto second = enqueue("order-1", "invoice-1");
    EXPECT_FALSE(first.duplicate);
    EXPECT_TRUE(second.duplicate);
    EXPECT_EQ(second.id, first.id);
    EXPECT_EQ(first.id.size(), 32u);
    auto s = stats();
    EXPECT_EQ(s.ready, 1u);
    EXPECT_EQ(s.counter("enqueued"), 1u);
    EXPECT_EQ(s.counter("duplicate_enqueues"), 1u);

    // A redelivery by the transport: the same job entered the stream twice.
    const std::string stream = "queue:{" + queue_name + "}:stream";
    auto rows = redis->cli({"XRANGE", stream, "-", "+"});
    ASSERT_NE(rows.find(first.id), std::string::npos);
    redis->cli({"XADD", stream, "*",  "id", first.id, "resource", "order-1", "key", "invoice-1", "payload", "{}",
                "ca",   "0",    "ba", "0",  "ia",     "0",        "dl",      "0",   "err",       ""});

    auto locks = client();
    BackgroundWorker w(QueueWorker::create(queue_options(), fast_worker(), locks, *store).value(),
                       [](const JobContext& ctx, Transaction& tx) { return insert_effect(ctx, tx); });
    ASSERT_TRUE(eventually([&] {
        auto s = stats();
        return s.counter("completed") + s.counter("duplicates") == 2;
    })) << describe(stats())
        << " / " << describe(w.worker().stats()) << " / "
        << (queue->dead(1).value().empty() ? "" : queue->dead(1).value()[0].reason);
    const auto ws = w.stop();
    s = stats();
    EXPECT_EQ(s.counter("completed"), 1u);
    EXPECT_EQ(s.counter("duplicates"), 1u);
    EXPECT_EQ(ws.duplicates, 1u);
    EXPECT_EQ(s.ready + s.in_flight + s.delayed + s.dead, 0u);
    EXPECT_EQ(effects(first.id), 1);
}

/// Counts contended acquisitions as the lock client saw them: ground truth independent of the
/// queue's own counters.
struct ContentionCounter : LockObserver {
    std::atomic<std::uint64_t> contended{0};
    void on_acquire(const AcquireEvent& e) noexcept override {
        if (e.result == AcquireResult::contended) ++contended;
    }
};

/// Records every job completion decision (the job's counters as they ended).
struct Completions : QueueObserver {
    std::mutex m;
    std::vector<Job> jobs;
    void on_decision(const Decision& d) noexcept override {
        if (d.verdict != Verdict::completed) return;
        std::lock_guard l(m);
        jobs.push_back(d.job);
    }
};

TEST_P(QueueTest, HotResourceEightWorkersNoOverlapExactCounts) {
    install_history(*db);
    constexpr int jobs = 50;
    std::uint64_t planned_business_failures = 0;
    for (int i = 0; i < jobs; ++i) {
        const int fails = i % 10 == 0 ? 2 : (i % 3 == 0 ? 1 : 0);
        planned_business_failures += static_cast<std::uint64_t>(fails);
        enqueue("hot", "job-" + std::to_string(i), "{\"fail\":" + std::to_string(fails) + "}");
    }
    // Execution intervals on one clock: the independent history of who ran when.
    std::mutex m;
    std::vector<std::pair<std::chrono::steady_clock::time_point, std::chrono::steady_clock::time_point>> runs;
    std::atomic<int> running{0}, max_running{0};
    auto handler = [&](const JobContext& ctx, Transaction& tx) -> std::expected<void, JobFailure> {
        const auto start = std::chrono::steady_clock::now();
        const int now = ++running;
        int seen = max_running.load();
        while (now > seen && !max_running.compare_exchange_weak(seen, now)) {
        }
        const int fails = ctx.job.payload == "{\"fail\":2}" ? 2 : ctx.job.payload == "{\"fail\":1}" ? 1 : 0;
        std::expected<void, JobFailure> result;
        if (static_cast<int>(ctx.job.business_attempts) < fails)
            result = std::unexpected(JobFailure::business("planned"));
        else result = insert_effect(ctx, tx);
        --running;
        std::lock_guard l(m);
        runs.emplace_back(start, std::chrono::steady_clock::now());
        return result;
    };
    auto counter = std::make_shared<ContentionCounter>();
    auto completions = std::make_shared<Completions>();
    std::vector<std::unique_ptr<LockClient>> clients;
    std::vector<std::unique_ptr<BackgroundWorker>> workers;
    const auto began = std::chrono::steady_clock::now();
    for (int i = 0; i < 8; ++i) {
        clients.push_back(std::make_unique<LockClient>(client(counter)));
        auto options = fast_worker();
        options.processing.observer = completions;
        workers.push_back(std::make_unique<BackgroundWorker>(
            QueueWorker::create(queue_options(), options, *clients.back(), *store).value(), handler));
    }
    ASSERT_TRUE(eventually([&] { return stats().counter("completed") == jobs; }, 90s))
        << "completed " << stats().counter("completed");
    const auto took = std::chrono::steady_clock::now() - began;
    WorkerStats total;
    for (auto& w : workers) {
        const auto s = w->stop();
        total.contention_retries += s.contention_retries;
        total.business_retries += s.business_retries;
    }
    EXPECT_LT(took, 60s);
    EXPECT_EQ(max_running.load(), 1);
    std::sort(runs.begin(), runs.end());
    for (std::size_t i = 1; i < runs.size(); ++i) ASSERT_LE(runs[i - 1].second, runs[i].first) << "overlap at " << i;
    // The store saw the fences strictly increase, one commit per job.
    const auto fences = history(*db, "hot");
    ASSERT_EQ(fences.size(), static_cast<std::size_t>(jobs));
    for (std::size_t i = 1; i < fences.size(); ++i) EXPECT_LT(fences[i - 1], fences[i]);
    EXPECT_EQ(total_effects(), jobs);

    const auto s = stats();
    std::uint64_t job_contention = 0, job_business = 0;
    for (const auto& j : completions->jobs) {
        job_contention += j.contention_attempts;
        job_business += j.business_attempts;
    }
    EXPECT_EQ(s.counter("contention_retries"), counter->contended.load());
    EXPECT_EQ(total.contention_retries, counter->contended.load());
    EXPECT_EQ(job_contention, counter->contended.load());
    EXPECT_EQ(s.counter("business_retries"), planned_business_failures);
    EXPECT_EQ(total.business_retries, planned_business_failures);
    EXPECT_EQ(job_business, planned_business_failures);
    EXPECT_EQ(s.counter("dead"), 0u);
    EXPECT_EQ(s.ready + s.in_flight + s.delayed, 0u);
    RecordProperty("contention_retries", std::to_string(counter->contended.load()));
}

TEST_P(QueueTest, PoisonJobReachesDeadLetterWithReason) {
    const auto poison = enqueue("acct-9", "poison-1");
    auto locks = client();
    std::atomic<bool> heal{false};
    auto handler = [&](const JobContext& ctx, Transaction& tx) -> std::expected<void, JobFailure> {
        if (!heal) return std::unexpected(JobFailure::business("cannot parse amount"));
        return insert_effect(ctx, tx);
    };
    {
        BackgroundWorker w(QueueWorker::create(queue_options(), fast_worker(), locks, *store).value(), handler);
        ASSERT_TRUE(eventually([&] { return stats().dead == 1; }));
        const auto ws = w.stop();
        EXPECT_EQ(ws.business_retries, 4u);
        EXPECT_EQ(ws.dead, 1u);
    }
    auto s = stats();
    EXPECT_EQ(s.counter("business_retries"), 4u);
    EXPECT_EQ(s.counter("dead"), 1u);
    EXPECT_EQ(s.ready + s.in_flight + s.delayed, 0u);
    auto dead = queue->dead(10);
    ASSERT_TRUE(dead);
    ASSERT_EQ(dead->size(), 1u);
    EXPECT_EQ(dead->at(0).job.id, poison.id);
    EXPECT_EQ(dead->at(0).reason, "failed 5 times, last: cannot parse amount");
    EXPECT_EQ(dead->at(0).job.business_attempts, 5u);
    EXPECT_GT(dead->at(0).failed_ms, 0);
    EXPECT_EQ(total_effects(), 0);

    // An empty id names no job (the scripts would read it as every job): refused, nothing moved.
    EXPECT_THROW((void)queue->retry(""), std::invalid_argument);
    EXPECT_THROW((void)queue->discard(""), std::invalid_argument);
    EXPECT_THROW((void)queue->retry_dead(std::string()), std::invalid_argument);
    EXPECT_EQ(stats().dead, 1u);
    ASSERT_EQ(queue->dead(10)->size(), 1u);

    // Fixed: retry it; it gets its attempts back and completes.
    heal = true;
    EXPECT_EQ(queue->retry_dead(std::string("no-such-id")).value(), 0u);
    EXPECT_EQ(queue->retry_dead(poison.id).value(), 1u);
    BackgroundWorker w(QueueWorker::create(queue_options(), fast_worker(), locks, *store).value(), handler);
    ASSERT_TRUE(eventually([&] { return stats().counter("completed") == 1; }));
    w.stop();
    EXPECT_EQ(stats().dead, 0u);
    EXPECT_EQ(effects(poison.id), 1);
}

TEST_P(QueueTest, LeaseLostDuringHandlerWritesNothingThenRetries) {
    const auto job = enqueue("r-lost", "k-lost");
    auto locks = client();
    std::atomic<int> calls{0};
    auto handler = [&](const JobContext& ctx, Transaction& tx) -> std::expected<void, JobFailure> {
        if (++calls == 1) {
            // Someone deletes our lock (an operator, an expiry): the keeper notices on renewal.
            redis->cli({"DEL", "lock:{r-lost}"});
            eventually([&] { return ctx.stop.stop_requested(); });
            EXPECT_TRUE(ctx.stop.stop_requested());
            // A careless handler writes anyway and reports success: it must not commit.
            if (auto r = insert_effect(ctx, tx, "after loss"); !r) return r;
            return {};
        }
        return insert_effect(ctx, tx, "retry");
    };
    auto options = fast_worker();
    options.processing.lease = milliseconds(300);  // renewed every 100 ms
    BackgroundWorker w(QueueWorker::create(queue_options(), options, locks, *store).value(), handler);
    ASSERT_TRUE(eventually([&] { return stats().counter("completed") == 1; }));
    const auto ws = w.stop();
    EXPECT_EQ(ws.lease_lost, 1u);
    EXPECT_EQ(stats().counter("lease_lost"), 1u);
    EXPECT_EQ(effects(job.id), 1);
    EXPECT_EQ(db->query("SELECT note FROM job_effects"), "retry\n");
}

TEST_P(QueueTest, DelayedJobWaitsInTheDelayedSet) {
    auto r = queue->enqueue(EnqueueRequest{
        .resource = ResourceName::make("d").value(), .idempotency_key = "dk", .delay = milliseconds(400)});
    ASSERT_TRUE(r);
    auto s = stats();
    EXPECT_EQ(s.delayed, 1u);
    EXPECT_EQ(s.ready, 0u);
    EXPECT_EQ(queue->promote_due(10).value(), 0u);  // not due yet
    auto locks = client();
    const auto began = std::chrono::steady_clock::now();
    std::atomic<long long> ran_after_ms{-1};
    BackgroundWorker w(
        QueueWorker::create(queue_options(), fast_worker(), locks, *store).value(),
        [&](const JobContext& ctx, Transaction& tx) {
            ran_after_ms = std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - began).count();
            return insert_effect(ctx, tx);
        });
    ASSERT_TRUE(eventually([&] { return stats().counter("completed") == 1; }));
    w.stop();
    EXPECT_GE(ran_after_ms.load(), 350);  // enqueued before `began`: allow the enqueue round trip
}

TEST_P(QueueTest, ShutdownCancelsAtTheDeadlineAndLeavesTheJobForRedelivery) {
    const auto job = enqueue("r-slow", "k-slow");
    auto locks = client();
    std::atomic<bool> entered{false};
    auto options = fast_worker();
    options.shutdown_grace = milliseconds(200);
    options.visibility_timeout = milliseconds(600);
    auto slow = [&](const JobContext& ctx, Transaction& tx) -> std::expected<void, JobFailure> {
        entered = true;
        // Waits for its stop token: the shutdown deadline cancels it.
        std::mutex mm;
        std::condition_variable_any cv;
        std::unique_lock l(mm);
        cv.wait(l, ctx.stop, [] { return false; });
        if (ctx.stop.stop_requested()) return std::unexpected(JobFailure::business("cancelled"));
        return insert_effect(ctx, tx);
    };
    {
        BackgroundWorker w(QueueWorker::create(queue_options(), options, locks, *store).value(), slow);
        ASSERT_TRUE(eventually([&] { return entered.load(); }));
        const auto ws = w.stop();
        EXPECT_EQ(ws.cancelled, 1u);
        EXPECT_EQ(ws.business_retries, 0u);
    }
    auto s = stats();
    EXPECT_EQ(s.in_flight, 1u);  // unacknowledged, for redelivery
    EXPECT_EQ(total_effects(), 0);
    // The lease was released at once: a new worker reclaims after the visibility timeout.
    auto info = locks.inspect(ResourceName::make("r-slow").value());
    ASSERT_TRUE(info);
    EXPECT_FALSE(info->holder.has_value());
    BackgroundWorker w(QueueWorker::create(queue_options(), options, locks, *store).value(),
                       [](const JobContext& ctx, Transaction& tx) { return insert_effect(ctx, tx); });
    ASSERT_TRUE(eventually([&] { return stats().counter("completed") == 1; }));
    const auto ws = w.stop();
    EXPECT_EQ(ws.reclaimed, 1u);
    EXPECT_EQ(effects(job.id), 1);
}

TEST_P(QueueTest, ProcessorFailsClosedAndRequeuesContention) {
    const Job job{.id = "00000000000000000000000000000001",
                  .queue = "q",
                  .resource = ResourceName::make("pc").value(),
                  .idempotency_key = "pk",
                  .payload = "{}",
                  .contention_attempts = 0,
                  .business_attempts = 0,
                  .infrastructure_attempts = 0,
                  .deliveries = 0,
                  .last_error = {}};
    std::atomic<int> ran{0};
    auto handler = [&](const JobContext& ctx, Transaction& tx) -> std::expected<void, JobFailure> {
        ++ran;
        return insert_effect(ctx, tx);
    };
    // Redis unreachable: never run without a lock.
    RedisEndpoint nowhere;
    nowhere.port = free_port();
    auto dead_client =
        LockClient::create(ClientOptions{.endpoint = nowhere, .connect_timeout = milliseconds(200)}).value();
    auto p1 = JobProcessor::create(dead_client, *store, {.retry = fast_policies()}).value();
    const Decision down = p1.process(job, handler);
    EXPECT_EQ(down.verdict, Verdict::retry_infrastructure);
    EXPECT_EQ(down.job.infrastructure_attempts, 1u);
    EXPECT_EQ(down.error, make_error_code(errc::unavailable));
    EXPECT_EQ(ran.load(), 0);
    // Held by someone else: requeue with the contention delay, no failure counted.
    auto locks = client();
    auto held = locks.hold(job.resource, AcquireOptions{.lease = milliseconds(5000)});
    ASSERT_TRUE(held && held->acquired());
    auto p2 = JobProcessor::create(locks, *store, {.retry = fast_policies()}).value();
    const Decision busy = p2.process(job, handler);
    EXPECT_EQ(busy.verdict, Verdict::requeue_contended);
    EXPECT_EQ(busy.job.contention_attempts, 1u);
    EXPECT_EQ(busy.job.business_attempts, 0u);
    EXPECT_GE(busy.delay, milliseconds(10));
    EXPECT_EQ(ran.load(), 0);
    ASSERT_TRUE(held->lease->release());
    // Acquired: runs, commits; the guard row is created on the way (not_found -> create).
    const Decision done = p2.process(job, handler);
    EXPECT_EQ(done.verdict, Verdict::completed);
    ASSERT_TRUE(done.fence.has_value());
    EXPECT_EQ(ran.load(), 1);
    // Again (a redelivery): duplicate, and the handler does not run a second time.
    const Decision again = p2.process(job, handler);
    EXPECT_EQ(again.verdict, Verdict::duplicate);
    EXPECT_EQ(ran.load(), 1);
    EXPECT_EQ(total_effects(), 1);
    // External mode: the completion is recorded by key; a redelivery does not run it again.
    Job ext = job;
    ext.idempotency_key = "ext-1";
    std::atomic<int> external_runs{0};
    auto external = [&](const JobContext&) -> std::expected<void, JobFailure> {
        ++external_runs;
        return {};
    };
    EXPECT_EQ(p2.process_external(ext, external).verdict, Verdict::completed);
    EXPECT_EQ(p2.process_external(ext, external).verdict, Verdict::duplicate);
    EXPECT_EQ(external_runs.load(), 1);
    // The lease is released after every attempt.
    auto info = locks.inspect(job.resource);
    ASSERT_TRUE(info);
    EXPECT_FALSE(info->holder.has_value());
}

INSTANTIATE_TEST_SUITE_P(Backends, QueueTest, ::testing::Values(Backend::sqlite, Backend::postgresql), backend_name);

}  // namespace
}  // namespace fencelock::test_support
