#include "queue_fixture.hpp"

#include <unistd.h>

#include <sstream>

#include "fencelock/redis_url.hpp"
#include "support/managed_redis.hpp"

namespace fencelock::test_support {

using local::RedisServer;
using std::chrono::milliseconds;

RetryPolicies fast_policies() {
    return RetryPolicies{
        .contention = {.base = milliseconds(10), .cap = milliseconds(200), .jitter = milliseconds(20)},
        .business = {.base = milliseconds(5), .cap = milliseconds(50), .jitter = milliseconds(5)},
        .max_business_attempts = 5,
        .infrastructure = {.base = milliseconds(10), .cap = milliseconds(200), .jitter = milliseconds(10)}};
}

std::string describe(const QueueStats& s) {
    std::ostringstream out;
    out << "ready=" << s.ready << " delayed=" << s.delayed << " in_flight=" << s.in_flight << " dead=" << s.dead;
    for (const auto& [k, v] : s.counters) out << " " << k << "=" << v;
    return out.str();
}

std::string describe(const WorkerStats& s) {
    std::ostringstream out;
    out << "delivered=" << s.delivered << " reclaimed=" << s.reclaimed << " completed=" << s.completed
        << " duplicates=" << s.duplicates << " contention=" << s.contention_retries
        << " business=" << s.business_retries << " later=" << s.retry_later << " infra=" << s.infrastructure_retries
        << " lease_lost=" << s.lease_lost << " dead=" << s.dead << " cancelled=" << s.cancelled
        << " superseded=" << s.superseded << " transport_errors=" << s.transport_errors;
    return out.str();
}

std::expected<void, JobFailure> insert_effect(const JobContext& ctx, Transaction& tx, const std::string& note) {
    auto r = tx.exec("INSERT INTO job_effects (job_id, fence, note) VALUES ($1, $2, $3)",
                     {ctx.job.id, std::to_string(ctx.fence.value()), note});
    if (!r) return std::unexpected(JobFailure::business(r.error().detail));
    return {};
}

void QueueTest::SetUp() {
    redis = tls_under_test() ? std::make_unique<RedisServer>(managed_redis_options()) : std::make_unique<RedisServer>();
    db = std::make_unique<TestDatabase>(GetParam());
    store = std::make_unique<FencedStore>(open_store(db->url(), StoreOptions{.pool_size = 16}));
    auto v = store->init();
    ASSERT_TRUE(v) << v.error().detail;
    db->execute(job_effects_table);
    auto q = JobQueue::create(queue_options());
    ASSERT_TRUE(q) << q.error().field;
    queue = std::make_unique<JobQueue>(std::move(*q));
    char tmpl[] = "/tmp/fencelock-queue-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir = tmpl;
}

void QueueTest::TearDown() {
    std::error_code ec;
    if (!dir.empty()) std::filesystem::remove_all(dir, ec);
}

RedisEndpoint QueueTest::endpoint() const {
    if (tls_under_test()) return parse_redis_url(managed_redis_url(*redis, queue_user)).value();
    RedisEndpoint e;
    e.port = redis->port();
    return e;
}

LockClient QueueTest::client(std::shared_ptr<LockObserver> observer) const {
    return LockClient::create(ClientOptions{.endpoint = endpoint(), .pool_size = 8, .observer = std::move(observer)})
        .value();
}

EnqueueResult QueueTest::enqueue(const std::string& resource, const std::string& key, const std::string& payload) {
    auto r = queue->enqueue(
        EnqueueRequest{.resource = ResourceName::make(resource).value(), .idempotency_key = key, .payload = payload});
    if (!r) throw std::runtime_error("enqueue failed: " + r.error().message());
    return *r;
}

QueueStats QueueTest::stats() {
    auto s = queue->stats();
    if (!s) throw std::runtime_error("stats failed: " + s.error().message());
    return *s;
}

int QueueTest::effects(const std::string& job_id) const {
    return std::stoi(db->query("SELECT COUNT(*) FROM job_effects WHERE job_id = '" + job_id + "'"));
}

int QueueTest::total_effects() const { return std::stoi(db->query("SELECT COUNT(*) FROM job_effects")); }

BackgroundWorker::BackgroundWorker(QueueWorker worker, TransactionalHandler handler)
    : worker_(std::make_unique<QueueWorker>(std::move(worker))) {
    thread_ = std::thread([this, h = std::move(handler), token = stop_.get_token()]() mutable {
        result_ = worker_->run(std::move(h), token);
    });
}

BackgroundWorker::~BackgroundWorker() {
    if (thread_.joinable()) stop();
}

WorkerStats BackgroundWorker::stop() {
    stop_.request_stop();
    if (thread_.joinable()) thread_.join();
    return result_.value_or(WorkerStats{});
}

}  // namespace fencelock::test_support
