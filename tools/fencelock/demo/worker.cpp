// demo-worker: one worker process of `fencelock demo`. It repeatedly takes the lease of a random
// record, reads the record, thinks, checks that its lease is still valid, spends a while
// reaching the database (a slow network or external call), and writes the record back with its
// own id appended. A pause that lands after the check and before the write is exactly the case
// a lock alone cannot catch; with fencing the store rejects the late write.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <random>
#include <thread>

#include "cli.hpp"
#include "demo/history.hpp"
#include "demo/worker.hpp"
#include "fencelock/store.hpp"

namespace fencelock::demo {
namespace {

std::atomic<bool> stopping{false};
// Armed by the parent (SIGUSR1): freeze right after the next lease check, before the write,
// the way a GC pause or a descheduled thread can. Disarmed by SIGUSR2.
std::atomic<bool> pause_armed{false};
extern "C" void on_term(int) { stopping = true; }
extern "C" void on_arm(int) { pause_armed = true; }
extern "C" void on_disarm(int) { pause_armed = false; }

std::int64_t monotonic_ns() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Appends whole lines with O_APPEND: a worker killed mid-run loses at most the line in flight.
class HistoryFile {
public:
    explicit HistoryFile(const std::string& path) : fd_(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644)) {}
    ~HistoryFile() { if (fd_ >= 0) ::close(fd_); }
    void append(const std::string& line) {
        std::lock_guard lock(m_);
        const std::string l = line + "\n";
        if (fd_ >= 0 && ::write(fd_, l.data(), l.size()) < 0) { /* the report will show the gap */ }
    }

private:
    int fd_;
    std::mutex m_;
};

void sleep_ms(std::mt19937_64& rng, int lo, int hi) {
    std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(lo, hi)(rng)));
}

}  // namespace

int run_worker(const WorkerArgs& a) {
    struct sigaction sa{};
    sa.sa_handler = on_term;
    sigaction(SIGTERM, &sa, nullptr);
    sa.sa_handler = on_arm;
    sigaction(SIGUSR1, &sa, nullptr);
    sa.sa_handler = on_disarm;
    sigaction(SIGUSR2, &sa, nullptr);

    auto endpoint = parse_redis_url(a.redis_url);
    if (!endpoint) throw cli::InputError{"--redis", endpoint.error().message};
    auto client = LockClient::create({.endpoint = *endpoint,
                                      .key_prefix = a.key_prefix,
                                      .connect_timeout = std::chrono::milliseconds(200),
                                      .command_timeout = std::chrono::milliseconds(200)});
    if (!client) throw cli::InputError{client.error().field, client.error().message};
    StoreOptions store_options{.url = a.db_url, .pool_size = 1};
    store_options.enforce_fencing = a.fenced;
    auto store = FencedStore::create(store_options);
    if (!store) throw cli::InputError{"--db", store.error().message};

    HistoryFile history(a.history_path);
    std::mt19937_64 rng(a.seed);
    const auto lease = a.lease;
    for (unsigned n = 0; !stopping && monotonic_ns() < a.until_ns; ++n) {
        const auto record = *ResourceName::make(a.records[rng() % a.records.size()]);
        Operation op{a.worker, record.str(), 0, "w" + std::to_string(a.worker) + "." + std::to_string(a.generation) +
                                                   "-" + std::to_string(n), monotonic_ns(), 0, 0, ""};
        KeepOptions keep;
        keep.on_lost = [&, w = a.worker](const LeaseLoss& loss) {
            history.append(to_json_line(LeaseLost{w, loss.resource.str(), loss.fence.value(), monotonic_ns(),
                                                  std::string(to_string(loss.reason))}));
        };
        auto held = client->hold(record, {.lease = lease, .wait = lease * 2, .backoff = {.base = std::chrono::milliseconds(2), .max = std::chrono::milliseconds(40)}}, keep);
        if (!held || !held->acquired()) {
            if (held) {
                op.result = "contended";
                op.end_ns = monotonic_ns();
                history.append(to_json_line(op));
            }
            continue;  // Redis down or busy: fail closed, try again
        }
        HeldLease& lock = *held->lease;
        op.fence = lock.fence().value();
        op.acquired_ns = monotonic_ns();

        // Read. With fencing: a claim, which raises last_fence to ours in the same statement, so
        // any older holder's late write is rejected even if it lands before ours.
        std::string value;
        if (a.fenced) {
            auto claimed = store->claim(record, lock.fence(), lock.owner());
            if (!claimed || claimed->status != ClaimStatus::claimed) {
                op.result = claimed ? std::string(to_string(claimed->status)) : "error";
                op.end_ns = monotonic_ns();
                history.append(to_json_line(op));
                continue;
            }
            value = claimed->value;
        } else {
            auto read = store->read(record);
            if (!read || !*read) continue;
            value = (*read)->value;
        }
        sleep_ms(rng, a.think_min_ms, a.think_max_ms);  // think
        if (!lock.valid()) {  // the check every careful worker makes...
            op.result = "aborted";
            op.end_ns = monotonic_ns();
            history.append(to_json_line(op));
            continue;
        }
        if (pause_armed.exchange(false)) raise(SIGSTOP);  // the parent resumes us after 3 leases
        sleep_ms(rng, a.gap_min_ms, a.gap_max_ms);  // ...and the gap between the check and the write
        op.write_ns = monotonic_ns();
        const std::string next = value.empty() ? op.id : value + " " + op.id;
        auto written = store->write(record, lock.fence(), next, {.owner = lock.owner()});
        op.result = written ? std::string(to_string(written->status)) : "error";
        op.end_ns = monotonic_ns();
        history.append(to_json_line(op));
    }
    return cli::exit_ok;
}

}  // namespace fencelock::demo
