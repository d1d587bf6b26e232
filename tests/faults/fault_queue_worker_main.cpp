// fault_queue_worker: a queue worker process the kill scenarios SIGKILL at a chosen point of
// its first job (QueueWorker with JobRecorder's handler, queue_job.hpp).
//
// Usage: fault_queue_worker REDIS_URL TARGET_SPEC QUEUE HISTORY_FILE NAME POINT EFFECT LEASE_MS MARKER
//   POINT   acquired | mutation | committed: where to stop (JobPlan::at)
//   EFFECT  in_transaction | forget_key | autocommit (Effect)
// At POINT it writes MARKER (atomically) and stays there until killed: the test decides when,
// no timer does. Its ops go to HISTORY_FILE as process NAME.
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "faults/queue_job.hpp"
#include "faults/store_target.hpp"

using namespace fencelock;
using namespace fencelock::faults;

int main(int argc, char** argv) {
    if (argc != 10) {
        std::fprintf(stderr,
                     "usage: fault_queue_worker REDIS_URL TARGET_SPEC QUEUE HISTORY_FILE NAME POINT EFFECT "
                     "LEASE_MS MARKER\n");
        return 2;
    }
    const std::string point = argv[6], effect = argv[7];
    const std::filesystem::path marker = argv[9];
    auto endpoint = parse_redis_url(argv[1]);
    auto target = open_target(argv[2]);
    auto* store = dynamic_cast<StoreTarget*>(target.get());
    if (!endpoint || store == nullptr) return 2;
    auto locks = LockClient::create({.endpoint = *endpoint});
    if (!locks) return 2;
    Recorder ops(argv[5], argv[4]);

    std::atomic<bool> stopped{false};
    JobPlan plan{.effect = effect == "autocommit"   ? Effect::autocommit
                           : effect == "forget_key" ? Effect::forget_key
                                                    : Effect::in_transaction,
                 .at = [&](std::string_view at) {
                     if (at != point || stopped.exchange(true)) return;
                     std::ofstream(marker.string() + ".tmp") << ::getpid() << '\n';
                     std::filesystem::rename(marker.string() + ".tmp", marker);
                     for (;;) ::pause();
                 }};
    auto recorder = std::make_shared<JobRecorder>(ops, store->store(), std::move(plan));
    auto worker = QueueWorker::create(
        {.queue = argv[3], .endpoint = *endpoint},
        scenario_worker(std::chrono::milliseconds(std::stoll(argv[8])), std::chrono::seconds(60), recorder), *locks,
        store->store());
    if (!worker) {
        std::fprintf(stderr, "bad worker options: %s: %s\n", worker.error().field.c_str(),
                     worker.error().message.c_str());
        return 2;
    }
    std::stop_source never;
    recorder->run(*worker, never.get_token());
    return 0;
}
