#include "faults/queue_scenario.hpp"

#include "faults/store_target.hpp"

namespace fencelock::faults {

WorkerThread::WorkerThread(LockClient locks, FencedStore& store, const QueueOptions& queue,
                           const WorkerOptions& options, std::shared_ptr<JobRecorder> recorder)
    : locks_(std::move(locks)), recorder_(std::move(recorder)) {
    auto w = QueueWorker::create(queue, options, locks_, store);
    if (!w) throw std::invalid_argument("WorkerOptions." + w.error().field + ": " + w.error().message);
    worker_ = std::make_unique<QueueWorker>(std::move(*w));
    thread_ = std::jthread([this](std::stop_token stop) { stats_ = recorder_->run(*worker_, stop); });
}

WorkerStats WorkerThread::stop() {
    if (thread_.joinable()) {
        thread_.request_stop();
        thread_.join();
    }
    return stats_;
}

void QueueScenario::SetUp() {
    ScenarioTest::SetUp();
    if (HasFatalFailure()) return;
    ASSERT_NE(dynamic_cast<StoreTarget*>(target.get()), nullptr) << "queue scenarios need a store backend";
    auto q = JobQueue::create(queue_options());
    ASSERT_TRUE(q) << q.error().field << ": " << q.error().message;
    queue = std::make_unique<JobQueue>(std::move(*q));
    jobs = recorder("queue");
    book = std::make_unique<JobBook>(*jobs);
}

void QueueScenario::TearDown() {
    queue.reset();
    ScenarioTest::TearDown();
}

FencedStore& QueueScenario::store() { return dynamic_cast<StoreTarget&>(*target).store(); }

QueueOptions QueueScenario::queue_options() const {
    return QueueOptions{.queue = "faults", .endpoint = *parse_redis_url(redis->url())};
}

std::string QueueScenario::enqueue(const std::string& resource, const std::string& key) {
    const auto op = jobs->invoke(OpKind::job, resource, 0, {}, key);
    auto r = queue->enqueue({.resource = res(resource), .idempotency_key = key});
    if (!r) throw std::runtime_error("enqueue: " + r.error().message());
    book->opened(r->id, op);
    return r->id;
}

std::unique_ptr<WorkerThread> QueueScenario::start_worker(const std::string& name, JobPlan plan,
                                                          const WorkerOptions& options) {
    worker_recorders.push_back(recorder(name));
    auto rec = std::make_shared<JobRecorder>(*worker_recorders.back(), store(), std::move(plan), book.get());
    WorkerOptions with_observer = options;
    with_observer.processing.observer = rec;
    return std::make_unique<WorkerThread>(client(), store(), queue_options(), with_observer, rec);
}

QueueStats QueueScenario::stats() {
    auto s = queue->stats();
    if (!s) throw std::runtime_error("queue stats: " + s.error().message());
    return *s;
}

}  // namespace fencelock::faults
