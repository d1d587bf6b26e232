// queue_bench: jobs per second through QueueWorker (transactional handler inserting one row,
// SQLite store), for 1 and 8 worker slots, on distinct resources and on one hot resource.
// Starts its own redis-server. Prints one JSON line per scenario.
//
//   queue_bench [--jobs N] [--hot-jobs N]
#include <nlohmann/json.hpp>

#include <filesystem>
#include <iostream>
#include <thread>

#include "fencelock/queue.hpp"
#include "local_servers/redis_server.hpp"

using namespace fencelock;
using std::chrono::milliseconds;

namespace {

struct Scenario {
    std::string name;
    std::size_t slots;
    bool hot;
    std::size_t jobs;
    RetryPolicy contention;
};

nlohmann::json run(const Scenario& sc, const local::RedisServer& redis, int round) {
    const auto dir = std::filesystem::temp_directory_path() / ("fencelock-qbench-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const std::string url = "sqlite://" + (dir / (sc.name + std::to_string(round) + ".db")).string();
    auto store = FencedStore::create(StoreOptions{.url = url, .pool_size = sc.slots + 2}).value();
    store.init().value();
    store.create_resource(ResourceName::make("setup").value(), std::string_view("")).value();
    (void)store.transact(ResourceName::make("setup").value(), FencingToken(1), {}, [](Transaction& tx) {
        if (auto r = tx.exec("CREATE TABLE IF NOT EXISTS effects (job TEXT, fence BIGINT)"); !r)
            return std::expected<void, StoreError>(std::unexpected(r.error()));
        return std::expected<void, StoreError>();
    });
    RedisEndpoint ep;
    ep.port = redis.port();
    const std::string qname = sc.name + "-" + std::to_string(round);
    auto queue = JobQueue::create(QueueOptions{.queue = qname, .endpoint = ep}).value();
    for (std::size_t i = 0; i < sc.jobs; ++i) {
        const std::string r = sc.hot ? "hot" : "r-" + std::to_string(i);
        queue.enqueue({.resource = ResourceName::make(r).value(), .idempotency_key = qname + "-" + std::to_string(i)})
            .value();
        if (!sc.hot || i == 0) store.create_resource(ResourceName::make(r).value(), std::string_view("")).value();
    }
    auto locks = LockClient::create(ClientOptions{.endpoint = ep, .pool_size = sc.slots + 1}).value();
    WorkerOptions options{.concurrency = sc.slots,
                          .processing = {.lease = milliseconds(10'000)},
                          .block = milliseconds(50),
                          .promote_every = milliseconds(20)};
    options.processing.retry.contention = sc.contention;
    auto worker = QueueWorker::create(QueueOptions{.queue = qname, .endpoint = ep}, options, locks, store).value();
    std::stop_source stop;
    const auto start = std::chrono::steady_clock::now();
    std::thread t([&] {
        worker.run(
            [](const JobContext& ctx, Transaction& tx) -> std::expected<void, JobFailure> {
                if (auto r = tx.exec("INSERT INTO effects (job, fence) VALUES ($1, $2)",
                                     {ctx.job.id, std::to_string(ctx.fence.value())});
                    !r)
                    return std::unexpected(JobFailure::business(r.error().detail));
                return {};
            },
            stop.get_token());
    });
    while (queue.stats().value().counter("completed") < sc.jobs) std::this_thread::sleep_for(milliseconds(2));
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    stop.request_stop();
    t.join();
    const auto s = queue.stats().value();
    std::filesystem::remove_all(dir);
    return {{"scenario", sc.name},
            {"slots", sc.slots},
            {"jobs", sc.jobs},
            {"seconds", secs},
            {"jobs_per_second", sc.jobs / secs},
            {"contention_retries", s.counter("contention_retries")}};
}

}  // namespace

int main(int argc, char** argv) {
    std::size_t jobs = 2000, hot_jobs = 200;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string f = argv[i];
        if (f == "--jobs") jobs = std::stoul(argv[i + 1]);
        else if (f == "--hot-jobs") hot_jobs = std::stoul(argv[i + 1]);
    }
    local::RedisServer redis;
    const RetryPolicy defaults{};
    const RetryPolicy fast{.base = milliseconds(5), .cap = milliseconds(100), .jitter = milliseconds(10)};
    const std::vector<Scenario> scenarios = {
        {"distinct-1", 1, false, jobs, defaults},        {"distinct-8", 8, false, jobs, defaults},
        {"hot-1", 1, true, hot_jobs, defaults},          {"hot-8-default-backoff", 8, true, hot_jobs, defaults},
        {"hot-8-fast-backoff", 8, true, hot_jobs, fast},
    };
    int round = 0;
    for (const auto& sc : scenarios) std::cout << run(sc, redis, ++round).dump() << std::endl;
}
