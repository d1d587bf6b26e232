// fencelock-queue's line in ops/redis/fencelock.acl (acl_fixture.hpp): enqueue and work jobs as
// that user, with nothing refused but CONFIG GET and every command the line adds to the locks
// line run by the queue; the line less its keys or XREADGROUP refused, naming them.
#include <thread>

#include "integration/acl_fixture.hpp"
#include "integration/lock_fixture.hpp"

// The queue runtime is linked in (through fencelock::obs) whenever its target is built; the one
// definition that says so is the CLI's.
#if defined(FENCELOCK_WITH_STORE) && defined(FENCELOCK_CLI_WITH_QUEUE)
#include "fencelock/queue.hpp"
#include "fencelock/store.hpp"

namespace fencelock::test_support {
namespace {

using namespace std::chrono_literals;

class AclQueueTest : public AclTest {
protected:
    void SetUp() override {
        AclTest::SetUp();
        auto s = FencedStore::create({.url = "sqlite://" + (dir.path() / "jobs.db").string()});
        ASSERT_TRUE(s);
        store = std::make_unique<FencedStore>(std::move(*s));
        ASSERT_TRUE(store->init());
    }
    QueueOptions queue_options() const { return {.queue = "jobs", .endpoint = endpoint_as(queue_user)}; }
    static WorkerOptions worker_options() {
        return {.processing = {.lease = 300ms, .retry = {.max_business_attempts = 1}},
                .visibility_timeout = 1000ms,
                .heartbeat_every = 20ms,
                .block = 100ms,
                .promote_every = 20ms,
                .shutdown_grace = 5000ms};
    }
    static EnqueueRequest job(std::string_view resource_name, std::string key, milliseconds delay = 0ms) {
        return {.resource = resource(resource_name), .idempotency_key = std::move(key), .delay = delay};
    }
    std::unique_ptr<FencedStore> store;
};

// Enqueue (new, duplicate, delayed), work (complete with keeper renewals and heartbeats, promote,
// dead-letter), read the dead letters and retry them, stats, and the worker's clean exit.
TEST_F(AclQueueTest, TheQueueUserEnqueuesAndWorksJobs) {
    reset_stats();
    auto queue = JobQueue::create(queue_options()).value();
    auto first = queue.enqueue(job("acl:a", "a"));
    ASSERT_TRUE(first) << error_detail(first.error());
    auto again = queue.enqueue(job("acl:a", "a"));
    ASSERT_TRUE(again && again->duplicate);
    ASSERT_TRUE(queue.enqueue(job("acl:b", "b", 50ms)));
    ASSERT_TRUE(queue.enqueue(job("acl:d", "d")));

    auto locks = client_as(queue_user, {.clock_probe_interval = 100ms});
    auto worker = QueueWorker::create(queue_options(), worker_options(), locks, *store).value();
    const TransactionalHandler handler = [&](const JobContext& ctx, Transaction&) -> std::expected<void, JobFailure> {
        if (ctx.job.idempotency_key == "d") return std::unexpected(JobFailure::permanent("dead on purpose"));
        // In flight long enough for the keeper to renew the lease and the heartbeat to claim it again.
        if (ctx.job.idempotency_key == "a" &&
            !eventually([&] { return ctx.lease.renewals() >= 1 && calls("xclaim") >= 1; }))
            return std::unexpected(JobFailure::business("no renewal or heartbeat while in flight"));
        return {};
    };
    std::optional<WorkerStats> result;
    std::jthread running([&](std::stop_token stop) { result = worker.run(handler, stop); });
    const auto counter = [&](std::string_view name) {
        auto s = queue.stats();
        return s ? s->counter(name) : 0;
    };
    EXPECT_TRUE(eventually([&] { return counter("completed") == 2 && counter("dead") == 1; }))
        << "completed " << counter("completed") << ", dead " << counter("dead");
    auto dead = queue.dead(10);
    ASSERT_TRUE(dead && dead->size() == 1u) << (dead ? "" : error_detail(dead.error()));
    auto retried = queue.retry_dead(dead->front().job.id);
    ASSERT_TRUE(retried && *retried == 1u);
    EXPECT_TRUE(eventually([&] { return counter("dead") == 2; }));
    running.request_stop();
    running.join();
    ASSERT_TRUE(result);
    EXPECT_EQ(result->transport_errors, 0u);
    EXPECT_EQ(result->completed, 2u);

    EXPECT_EQ(unexpected_denials(), "");
    // The worker runs the lock scripts as a lock client does, on any of their paths (a release
    // when someone else waits hands the lock on): the locks line is in the queue line, and what
    // the queue line adds is what the queue ran.
    std::set<std::string> lock_commands;
    for (const auto& r : user(locks_user).rules)
        if (r.starts_with("+")) lock_commands.insert(r.substr(1));
    const auto& queue_rules = user(queue_user).rules;
    for (const auto& r : user(locks_user).rules) {
        if (r == "+ssubscribe" || r == "+sunsubscribe" || is_placeholder(r)) continue;  // it never waits
        EXPECT_NE(std::ranges::find(queue_rules, r), queue_rules.end()) << r;
    }
    EXPECT_EQ(granted_unused(queue_user, lock_commands), "");
}

TEST_F(AclQueueTest, TheQueueLineLessItsKeysOrXreadgroupIsRefusedNamingIt) {
    set_rules(queue_user, rules_without(queue_user, "~queue:{*}:*"));
    {
        auto queue = JobQueue::create(queue_options()).value();
        auto refused = queue.enqueue(job("acl:a", "a"));
        ASSERT_FALSE(refused);
        expect_noperm(refused.error(), "queue:{jobs}:stream");
    }

    set_rules(queue_user, rules_without(queue_user, "+xreadgroup"));
    auto locks = client_as(queue_user);
    auto worker = QueueWorker::create(queue_options(), worker_options(), locks, *store).value();
    std::jthread running([&](std::stop_token stop) {
        worker.run([](const JobContext&, Transaction&) -> std::expected<void, JobFailure> { return {}; }, stop);
    });
    EXPECT_TRUE(eventually([&] { return worker.stats().transport_errors >= 1; }));
    EXPECT_TRUE(denied("command", "toplevel", "xreadgroup")) << unexpected_denials();
    running.request_stop();
    running.join();
    expect_noperm(make_error_code(errc::auth_failed), "'xreadgroup'");
}

}  // namespace
}  // namespace fencelock::test_support
#endif
