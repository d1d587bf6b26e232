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
#include "demo/events.hpp"
#include "demo/run_support.hpp"
#include "demo/worker.hpp"
#include "fencelock/store.hpp"
#include "redis/hiredis_connection.hpp"

namespace fencelock::demo {
namespace {

std::atomic<bool> stopping{false};
// Armed by the parent (SIGUSR1): freeze right after the next lease check, before the write,
// the way a GC pause or a descheduled thread can. Disarmed by SIGUSR2.
std::atomic<bool> pause_armed{false};
extern "C" void on_term(int) { stopping = true; }
extern "C" void on_arm(int) { pause_armed = true; }
extern "C" void on_disarm(int) { pause_armed = false; }

// Appends whole lines with O_APPEND: a worker killed mid-run loses at most the line in flight.
class HistoryFile {
public:
    explicit HistoryFile(const std::string& path) : fd_(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644)) {}
    ~HistoryFile() {
        if (fd_ >= 0) ::close(fd_);
    }
    void append(const std::string& line) {
        std::lock_guard lock(m_);
        const std::string l = line + "\n";
        if (fd_ >= 0 && ::write(fd_, l.data(), l.size()) < 0) { /* the report will show the gap */
        }
    }

private:
    int fd_;
    std::mutex m_;
};

void sleep_ms(std::mt19937_64& rng, int lo, int hi) {
    std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(lo, hi)(rng)));
}

// INCR on a connection of its own: the fence of the naive design. nullopt when Redis failed.
std::optional<std::uint64_t> incr_fence(detail::Connection& redis, const std::string& key) {
    const std::string_view argv[] = {"INCR", key};
    auto reply = redis.command(argv);
    if (!reply || reply->kind != detail::Reply::Kind::integer || reply->integer <= 0) return std::nullopt;
    return static_cast<std::uint64_t>(reply->integer);
}

}  // namespace

std::string incr_fence_key(const std::string& key_prefix, const std::string& record) {
    return key_prefix + "demo-incr:{" + record + "}";
}

std::vector<std::string> worker_command(const WorkerArgs& a) {
    std::vector<std::string> argv{self_exe(),
                                  "demo-worker",
                                  "--redis",
                                  a.redis_url,
                                  "--db",
                                  a.db_url,
                                  "--prefix",
                                  a.key_prefix,
                                  "--history",
                                  a.history_path,
                                  "--lease",
                                  std::to_string(a.lease.count()) + "ms",
                                  "--worker",
                                  std::to_string(a.worker),
                                  "--generation",
                                  std::to_string(a.generation),
                                  "--seed",
                                  std::to_string(a.seed),
                                  "--until-ns",
                                  std::to_string(a.until_ns),
                                  a.fenced ? "--fenced" : "--unfenced"};
    for (const auto& r : a.records) argv.insert(argv.end(), {"--record", r});
    if (a.incr_fences) argv.push_back("--incr-fences");
    if (a.plain_reads) argv.push_back("--plain-reads");
    if (a.freeze_at_write) argv.push_back("--freeze-at-write");
    return argv;
}

int run_worker(const WorkerArgs& a) {
    struct sigaction sa {};
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

    std::unique_ptr<detail::Connection> incr_redis;
    if (a.incr_fences)
        incr_redis = detail::make_hiredis_connection({.endpoint = *endpoint,
                                                      .connect_timeout = std::chrono::milliseconds(200),
                                                      .command_timeout = std::chrono::milliseconds(200)});
    HistoryFile history(a.history_path);
    std::mt19937_64 rng(a.seed);
    const auto lease = a.lease;
    for (unsigned n = 0; !stopping && monotonic_ns() < a.until_ns; ++n) {
        const auto record = *ResourceName::make(a.records[rng() % a.records.size()]);
        Operation op{a.worker,
                     record.str(),
                     0,
                     "w" + std::to_string(a.worker) + "." + std::to_string(a.generation) + "-" + std::to_string(n),
                     monotonic_ns(),
                     0,
                     0,
                     "",
                     ""};
        KeepOptions keep;
        keep.on_lost = [&, w = a.worker](const LeaseLoss& loss) {
            history.append(to_json_line(LeaseLost{w, loss.resource.str(), loss.fence.value(), monotonic_ns(),
                                                  std::string(to_string(loss.reason))}));
        };
        auto held =
            client->hold(record,
                         {.lease = lease,
                          .wait = lease * 2,
                          .backoff = {.base = std::chrono::milliseconds(2), .max = std::chrono::milliseconds(40)}},
                         keep);
        if (!held || !held->acquired()) {
            if (held) {
                op.result = "contended";
                op.end_ns = monotonic_ns();
                history.append(to_json_line(op));
            }
            continue;  // Redis down or busy: fail closed, try again
        }
        HeldLease& lock = *held->lease;
        FencingToken fence = lock.fence();
        if (incr_redis) {
            auto incremented = incr_fence(*incr_redis, incr_fence_key(a.key_prefix, record.str()));
            if (!incremented) continue;  // no fence, no write: fail closed
            fence = FencingToken(*incremented);
        }
        op.fence = fence.value();
        op.acquired_ns = monotonic_ns();

        // Read. With fencing: a claim, which raises last_fence to ours in the same statement, so
        // any older holder's late write is rejected even if it lands before ours.
        std::string value;
        if (a.fenced && !a.plain_reads) {
            auto claimed = store->claim(record, fence, lock.owner());
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
        if (const auto seen = appended_ids(value); !seen.empty()) op.based_on = seen.back();
        sleep_ms(rng, a.think_min_ms, a.think_max_ms);  // think
        if (!lock.valid()) {                            // the check every careful worker makes...
            op.result = "aborted";
            op.end_ns = monotonic_ns();
            history.append(to_json_line(op));
            continue;
        }
        if (!a.freeze_at_write && pause_armed.exchange(false)) raise(SIGSTOP);  // resumed after 3 leases
        sleep_ms(rng, a.gap_min_ms, a.gap_max_ms);  // ...and the gap between the check and the write
        if (a.freeze_at_write && pause_armed.exchange(false)) raise(SIGSTOP);
        op.write_ns = monotonic_ns();
        const std::string next = value.empty() ? op.id : value + " " + op.id;
        auto written = store->write(record, fence, next, {.owner = lock.owner()});
        op.result = written ? std::string(to_string(written->status)) : "error";
        op.end_ns = monotonic_ns();
        history.append(to_json_line(op));
    }
    return cli::exit_ok;
}

}  // namespace fencelock::demo
