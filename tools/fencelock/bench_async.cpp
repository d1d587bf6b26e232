// bench --async: the lockers of the distinct scenario, or the contenders of the hot one, on
// AsyncLockClient. This thread issues every locker's first operation; from then on each
// locker's callbacks issue its next one (release, then the next cycle or turn), so no thread is
// a locker's own: on one server every locker runs on the client's one loop thread and one
// connection. A measurement tool, not a test: it reports figures and asserts nothing.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <latch>
#include <thread>

#include "bench.hpp"
#include "bench_processes.hpp"
#include "fencelock/async_client.hpp"

namespace fencelock::cli {
namespace {

using clock = std::chrono::steady_clock;

// One locker's cycle chain. Its callbacks run one after another (each issues the next), so
// its counters need no lock; the latch publishes them to the reporting thread.
struct Locker {
    AsyncLockClient* client;
    ResourceName resource;
    AcquireOptions options;
    const std::atomic<bool>* stop;
    std::latch* finished;
    LockerStats* stats;

    void cycle() {
        if (stop->load(std::memory_order_relaxed)) return finished->count_down();
        const auto t0 = clock::now();
        client->try_acquire(resource, options, [this, t0](Result<Acquisition> got) {
            if (!got || !got->acquired()) return failed(got ? std::error_code{} : got.error());
            client->release(resource, got->lease->owner, [this, t0](Result<ReleaseStatus> released) {
                if (!released || *released != ReleaseStatus::released)
                    return failed(released ? std::error_code{} : released.error());
                stats->cycle_us.push_back(
                    std::chrono::duration_cast<std::chrono::microseconds>(clock::now() - t0).count());
                cycle();
            });
        });
    }

    void failed(std::error_code ec) {
        ++stats->errors;
        if (ec && !stats->first_error) stats->first_error = ec;
        cycle();
    }
};

// One hot contender's chain of turns: acquire (waiting), release, again. Its callbacks run one
// after another, so its figures need no lock; the latch publishes them.
struct HotContender {
    AsyncLockClient* client;
    const ResourceName* resource;
    const AcquireOptions* options;
    const std::atomic<bool>* stop;
    std::latch* finished;
    std::vector<std::int64_t> wait_us{};
    std::uint64_t unsuccessful = 0;  // attempts that did not get the lock
    std::uint64_t errors = 0;
    std::error_code first_error{};

    void turn() {
        if (stop->load(std::memory_order_relaxed)) return finished->count_down();
        const auto t0 = clock::now();
        client->acquire(*resource, *options, [this, t0](Result<Acquisition> got) {
            if (!got || !got->acquired()) return failed(got ? std::error_code{} : got.error());
            wait_us.push_back(std::chrono::duration_cast<std::chrono::microseconds>(clock::now() - t0).count());
            unsuccessful += got->unsuccessful_attempts;
            client->release(*resource, got->lease->owner, [this](Result<ReleaseStatus> released) {
                if (!released || *released != ReleaseStatus::released)
                    return failed(released ? std::error_code{} : released.error());
                turn();
            });
        });
    }

    void failed(std::error_code ec) {
        ++errors;
        if (ec && !first_error) first_error = ec;
        turn();
    }
};

}  // namespace

HotSample run_async_contenders(const Globals& g, const BenchArgs& a, std::chrono::milliseconds duration,
                               const AcquireOptions& base, const ResourceName& resource,
                               const std::function<void()>& ready) {
    auto options_for_client = client_options(g, {}, static_cast<std::size_t>(a.connections));
    auto client =
        AsyncLockClient::create(std::move(options_for_client), {.runners = static_cast<std::size_t>(a.runners)});
    if (!client) throw InputError{client.error().field, client.error().message};
    AcquireOptions options = base;
    options.wait = duration + std::chrono::seconds(10);  // every contender keeps waiting
    options.fair = a.fair;
    ready();
    std::atomic<bool> stop{false};
    std::latch finished(a.clients);
    std::vector<HotContender> contenders;
    contenders.reserve(static_cast<std::size_t>(a.clients));
    for (int i = 0; i < a.clients; ++i) contenders.push_back({&*client, &resource, &options, &stop, &finished});
    const auto started = clock::now();
    for (auto& c : contenders) c.turn();
    std::this_thread::sleep_for(duration);  // the measurement window itself
    stop = true;
    finished.wait();
    return collect_sample(contenders, started);
}

int report_distinct(const std::vector<LockerStats>& lockers, double elapsed_s, const BenchArgs& a,
                    const AcquireOptions& options, const nlohmann::json& extra) {
    std::vector<std::int64_t> all;
    std::uint64_t errors = 0;
    std::error_code first_error;
    for (const auto& s : lockers) {
        all.insert(all.end(), s.cycle_us.begin(), s.cycle_us.end());
        errors += s.errors;
        if (!first_error) first_error = s.first_error;
    }
    if (all.empty() && first_error) return redis_failure(first_error);
    std::sort(all.begin(), all.end());
    nlohmann::json out{{"scenario", "distinct"},
                       {"clients", a.clients},
                       {"replicas", options.replicas},
                       {"duration_s", elapsed_s},
                       {"cycles", all.size()},
                       {"cycles_per_sec", static_cast<double>(all.size()) / elapsed_s},
                       {"p50_us", percentile(all, 0.50)},
                       {"p99_us", percentile(all, 0.99)},
                       {"max_us", all.empty() ? 0 : all.back()},
                       {"errors", errors}};
    out.update(extra);
    emit(out);
    return exit_ok;
}

int run_async_distinct_bench(const Globals& g, const BenchArgs& a, std::chrono::milliseconds duration,
                             const AcquireOptions& options) {
    if (a.runners < 1 || a.runners > 1024) throw InputError{"--runners", "must be from 1 to 1024"};
    auto options_for_client = client_options(g, {}, static_cast<std::size_t>(a.connections));
    const bool on_runners = options_for_client.endpoint.uses_cluster();
    auto client =
        AsyncLockClient::create(std::move(options_for_client), {.runners = static_cast<std::size_t>(a.runners)});
    if (!client) throw InputError{client.error().field, client.error().message};
    std::atomic<bool> stop{false};
    std::latch finished(a.clients);
    std::vector<LockerStats> stats(static_cast<std::size_t>(a.clients));
    std::vector<Locker> lockers;
    lockers.reserve(static_cast<std::size_t>(a.clients));
    for (int i = 0; i < a.clients; ++i)
        lockers.push_back({&*client, *ResourceName::make(std::string(bench_prefix) + ":" + std::to_string(i)), options,
                           &stop, &finished, &stats[static_cast<std::size_t>(i)]});
    const auto started = clock::now();
    for (auto& l : lockers) l.cycle();
    std::this_thread::sleep_for(duration);  // the measurement window itself
    stop = true;
    finished.wait();
    const double elapsed = std::chrono::duration<double>(clock::now() - started).count();
    return report_distinct(stats, elapsed, a, options,
                           on_runners ? nlohmann::json{{"api", "async"}, {"runners", a.runners}}
                                      : nlohmann::json{{"api", "async"}, {"event_loop", true}});
}

}  // namespace fencelock::cli
