// fault_worker: one lease holder in its own process, for scenarios that freeze it (SIGSTOP).
//
// Usage: fault_worker REDIS_URL RESOURCE LEASE_MS TARGET_SPEC HISTORY_FILE NAME READY_FILE GO_FILE
//
// 1. holds RESOURCE with LockClient::hold (kept by the keeper), records the acquire;
// 2. reads the record from the target TARGET_SPEC names (open_target: a file register or a store);
// 3. checks that its lease is valid and records its hold up to that check: from here on it
//    behaves like a worker paused between its last check and its write (a GC pause, a swap-in);
// 4. writes its fence to READY_FILE and waits for GO_FILE to exist;
// 5. writes the record with its element (NAME) appended, with its fence; releases; exits 0.
// Every op goes to HISTORY_FILE as JSON lines (faults/fault_history.hpp).
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "faults/fault_history.hpp"
#include "faults/target.hpp"
#include "faults/worker.hpp"
#include "fencelock/client.hpp"

using namespace fencelock;
using namespace fencelock::faults;
using namespace std::chrono_literals;

int main(int argc, char** argv) {
    if (argc != 9) {
        std::fprintf(
            stderr,
            "usage: fault_worker REDIS_URL RESOURCE LEASE_MS TARGET_SPEC HISTORY_FILE NAME READY_FILE GO_FILE\n");
        return 2;
    }
    const std::string resource = argv[2];
    const std::filesystem::path ready = argv[7], go = argv[8];
    auto endpoint = parse_redis_url(argv[1]);
    if (!endpoint) return 2;
    auto client = LockClient::create({.endpoint = *endpoint, .connect_timeout = 200ms, .command_timeout = 200ms});
    if (!client) return 2;
    auto target = open_target(argv[4]);
    Recorder recorder(argv[6], argv[5]);
    RmwWorker worker(recorder, *target);

    const auto acquire_id = recorder.invoke(OpKind::acquire, resource);
    auto held = client->hold(*ResourceName::make(resource),
                             {.lease = std::chrono::milliseconds(std::stoll(argv[3])), .wait = 5s});
    if (!held || !held->acquired()) {
        recorder.complete(acquire_id, held ? Outcome::fail : Outcome::unknown, 0, {},
                          held ? "contended" : held.error().message());
        return 3;
    }
    HeldLease& lease = *held->lease;
    const auto fence = lease.fence().value();
    const auto start = now_ns();
    recorder.complete(acquire_id, Outcome::ok, fence);

    const std::string base = worker.read(resource, fence);
    if (!lease.valid()) return 4;
    recorder.hold(resource, fence, start, now_ns());

    {
        std::ofstream out(ready.string() + ".tmp");
        out << fence << '\n';
    }
    std::filesystem::rename(ready.string() + ".tmp", ready);
    // Waiting for a file the test creates; the test freezes this process meanwhile.
    const auto give_up = std::chrono::steady_clock::now() + 60s;
    while (!std::filesystem::exists(go)) {
        if (std::chrono::steady_clock::now() > give_up) return 5;
        std::this_thread::sleep_for(2ms);
    }

    worker.write(resource, base, argv[6], fence);
    const auto release_id = recorder.invoke(OpKind::release, resource, fence);
    auto released = lease.release();
    recorder.complete(release_id, released ? Outcome::ok : Outcome::unknown, 0, {},
                      released ? std::string(to_string(*released)) : released.error().message());
    return 0;
}
