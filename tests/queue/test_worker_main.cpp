// queue_test_worker: a QueueWorker process for the crash and pause scenarios. The handler
// inserts one job_effects row per job in the fenced transaction. With --pause-at it stops
// itself at a chosen point of the FIRST job, after writing DIR/paused (its pid), so the test
// can SIGKILL or SIGSTOP it there without guessing with sleeps:
//   acquired   lease granted, before the transaction
//   mutation   inside the transaction, after the effect row was inserted (not committed)
//   committed  after the commit, before the acknowledgement
// It stays there until DIR/go exists (or forever without --resume). It writes each decision as
// a line "verdict job_id reason" to DIR/decisions, and on SIGTERM/SIGINT shuts down gracefully
// and prints its counters as JSON.
//
//   queue_test_worker --redis PORT --db URL --queue Q --dir DIR [--pause-at P] [--resume]
//                     [--lease MS] [--visibility MS]
#include <signal.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <thread>

#include "fencelock/queue.hpp"

namespace {

using namespace fencelock;
using std::chrono::milliseconds;

struct Args {
    int redis_port = 0;
    std::string db, queue, dir, pause_at;
    bool resume = false;
    long lease_ms = 1000, visibility_ms = 600;
};

std::atomic<bool> paused_once{false};

/// Stops here the first time `point` is reached, if it is the chosen pause point.
void maybe_pause(const Args& a, std::string_view point) {
    if (a.pause_at != point || paused_once.exchange(true)) return;
    {
        std::ofstream(a.dir + "/paused.tmp") << ::getpid() << "\n";
        std::filesystem::rename(a.dir + "/paused.tmp", a.dir + "/paused");
    }
    // Waiting on a file, not a timer: the test decides when (and whether) this continues.
    while (!a.resume || !std::filesystem::exists(a.dir + "/go")) std::this_thread::sleep_for(milliseconds(2));
}

struct Hooks : QueueObserver {
    const Args& a;
    std::mutex m;
    explicit Hooks(const Args& args) : a(args) {}
    void on_acquired(const Job&, FencingToken) noexcept override { maybe_pause(a, "acquired"); }
    void on_decision(const Decision& d) noexcept override {
        {
            std::lock_guard l(m);
            std::ofstream(a.dir + "/decisions", std::ios::app)
                << to_string(d.verdict) << " " << d.job.id << " " << d.reason << "\n";
        }
        if (d.verdict == Verdict::completed) maybe_pause(a, "committed");
    }
};

}  // namespace

int main(int argc, char** argv) {
    Args a;
    for (int i = 1; i < argc; ++i) {
        const std::string flag = argv[i];
        if (flag == "--resume") {
            a.resume = true;
            continue;
        }
        if (i + 1 >= argc) {
            std::cerr << flag << " needs a value\n";
            return 2;
        }
        const std::string value = argv[++i];
        if (flag == "--redis") a.redis_port = std::stoi(value);
        else if (flag == "--db") a.db = value;
        else if (flag == "--queue") a.queue = value;
        else if (flag == "--dir") a.dir = value;
        else if (flag == "--pause-at") a.pause_at = value;
        else if (flag == "--lease") a.lease_ms = std::stol(value);
        else if (flag == "--visibility") a.visibility_ms = std::stol(value);
        else {
            std::cerr << "unknown flag " << flag << "\n";
            return 2;
        }
    }
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);  // before any thread: only sigwait sees them

    RedisEndpoint endpoint;
    endpoint.port = static_cast<std::uint16_t>(a.redis_port);
    auto locks = LockClient::create(ClientOptions{.endpoint = endpoint}).value();
    auto store = FencedStore::create(StoreOptions{.url = a.db}).value();
    auto hooks = std::make_shared<Hooks>(a);
    WorkerOptions options{
        .concurrency = 1,
        .processing =
            {.lease = milliseconds(a.lease_ms),
             .retry = {.contention = {.base = milliseconds(20), .cap = milliseconds(200), .jitter = milliseconds(20)},
                       .business = {.base = milliseconds(10), .cap = milliseconds(100), .jitter = milliseconds(10)},
                       .max_business_attempts = 5,
                       .infrastructure = {.base = milliseconds(20),
                                          .cap = milliseconds(200),
                                          .jitter = milliseconds(20)}},
             .observer = hooks},
        .visibility_timeout = milliseconds(a.visibility_ms),
        .block = milliseconds(100),
        .promote_every = milliseconds(20),
        .shutdown_grace = milliseconds(5000)};
    auto worker = QueueWorker::create(QueueOptions{.queue = a.queue, .endpoint = endpoint}, options, locks, store);
    if (!worker) {
        std::cerr << "bad options: " << worker.error().field << ": " << worker.error().message << "\n";
        return 2;
    }
    auto handler = [&a](const JobContext& ctx, Transaction& tx) -> std::expected<void, JobFailure> {
        auto r = tx.exec("INSERT INTO job_effects (job_id, fence, note) VALUES ($1, $2, $3)",
                         {ctx.job.id, std::to_string(ctx.fence.value()), std::to_string(::getpid())});
        if (!r) return std::unexpected(JobFailure::business(r.error().detail));
        maybe_pause(a, "mutation");
        return {};
    };
    std::stop_source stop;
    WorkerStats stats;
    std::thread runner([&] { stats = worker->run(handler, stop.get_token()); });
    int sig = 0;
    sigwait(&set, &sig);
    stop.request_stop();
    runner.join();
    std::cout << nlohmann::json{{"completed", stats.completed},
                                {"duplicates", stats.duplicates},
                                {"reclaimed", stats.reclaimed},
                                {"superseded", stats.superseded},
                                {"contention_retries", stats.contention_retries}}
                     .dump()
              << std::endl;
    return 0;
}
