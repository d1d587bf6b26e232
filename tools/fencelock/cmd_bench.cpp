// bench: acquire+release cycles on distinct resources, N locker threads sharing one client.
// A measurement tool, not a test: it reports figures and asserts nothing.
#include <sys/resource.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <iostream>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "bench.hpp"

namespace fencelock::cli {
namespace {

using nlohmann::json;
using clock = std::chrono::steady_clock;

double cpu_seconds() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    auto secs = [](timeval t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
    return secs(usage.ru_utime) + secs(usage.ru_stime);
}

// Runs fn(t, i) for every i < n on `threads` threads, thread t taking i = t, t + threads, ...
template <typename Fn>
void in_parallel(std::size_t threads, std::size_t n, Fn fn) {
    std::vector<std::jthread> running;
    for (std::size_t t = 0; t < threads; ++t)
        running.emplace_back([&, t] {
            for (std::size_t i = t; i < n; i += threads) fn(t, i);
        });
}

// keeper: one client holds `leases` kept leases; while this thread sleeps through the window,
// the process's CPU time is the keeper's (getrusage: user + system time of the whole process).
int run_keeper_bench(const Globals& g, const BenchArgs& a, std::chrono::milliseconds duration,
                     const AcquireOptions& options) {
    constexpr std::size_t holders = 8;
    auto client = make_client(g, {}, holders);
    // The leases are taken (and released) by `holders` threads at once: one after another,
    // 100,000 took minutes on a loaded machine.
    std::vector<std::optional<HeldLease>> held(static_cast<std::size_t>(a.leases));
    std::vector<std::error_code> failed(holders);
    std::atomic<bool> contended{false};
    in_parallel(holders, held.size(), [&](std::size_t t, std::size_t i) {
        if (failed[t] || contended) return;
        auto got =
            client.hold(*ResourceName::make(std::string(bench_prefix) + "-keeper:" + std::to_string(i)), options);
        if (!got) failed[t] = got.error();
        else if (!got->acquired()) contended = true;
        else held[i] = std::move(*got->lease);
    });
    for (const auto& e : failed)
        if (e) return redis_failure(e);
    if (contended) throw InputError{"--leases", "bench resources are held by someone else"};
    const KeeperStats before = client.keeper_stats();
    const double cpu0 = cpu_seconds();
    const auto t0 = clock::now();
    std::this_thread::sleep_for(duration);  // the measurement window itself
    const double elapsed = std::chrono::duration<double>(clock::now() - t0).count();
    const double cpu = cpu_seconds() - cpu0;
    const KeeperStats after = client.keeper_stats();
    const auto renewals = after.renewals_confirmed - before.renewals_confirmed;
    const auto batches = after.batches - before.batches;
    json out{{"scenario", "keeper"},
             {"leases", a.leases},
             {"lease_ms", options.lease.count()},
             {"duration_s", elapsed},
             {"renewals", renewals},
             {"renewals_per_sec", static_cast<double>(renewals) / elapsed},
             {"batches", batches},
             {"renewals_per_batch", batches ? static_cast<double>(renewals) / static_cast<double>(batches) : 0.0},
             {"max_send_lateness_us", after.max_send_lateness.count()},
             {"leases_lost", after.leases_lost},
             {"cpu_seconds", cpu},
             {"cpu_percent_of_one_core", 100.0 * cpu / elapsed}};
    if (renewals == 0) {
        // Renewals come about a third of a lease apart: a window shorter than that sees none.
        const std::string warning =
            "no renewal within the measurement window: make --duration longer than a third of "
            "--lease (" +
            std::to_string(options.lease.count()) + " ms), e.g. --duration " +
            std::to_string(std::max<long long>(1, options.lease.count() / 1000)) + "s";
        out["warning"] = warning;
        std::cerr << "fencelock: bench: " << warning << "\n";
    }
    emit(out);
    in_parallel(holders, held.size(), [&](std::size_t, std::size_t i) {
        if (held[i]) (void)held[i]->release();
    });
    return exit_ok;
}

int run_distinct_bench(const Globals& g, const BenchArgs& a, std::chrono::milliseconds duration,
                       const AcquireOptions& options) {
    // One client shared by every locker thread, as an application would: its connections
    // multiplex the lockers' commands.
    auto client = make_client(g, {}, static_cast<std::size_t>(a.connections));
    std::vector<LockerStats> stats(static_cast<std::size_t>(a.clients));
    std::atomic<bool> stop{false};
    std::vector<std::jthread> threads;
    const auto started = clock::now();
    for (int i = 0; i < a.clients; ++i) {
        threads.emplace_back([&, i] {
            // A fixed name per client index: repeated runs reuse the same fence counters.
            const auto resource = *ResourceName::make(std::string(bench_prefix) + ":" + std::to_string(i));
            auto& s = stats[static_cast<std::size_t>(i)];
            while (!stop.load(std::memory_order_relaxed)) {
                const auto t0 = clock::now();
                auto acquired = client.try_acquire(resource, options);
                bool ok = acquired && acquired->acquired();
                if (ok) {
                    auto released = client.release(resource, acquired->lease->owner);
                    ok = released && *released == ReleaseStatus::released;
                    if (!released && !s.first_error) s.first_error = released.error();
                } else if (!acquired && !s.first_error) {
                    s.first_error = acquired.error();
                }
                if (!ok) {
                    ++s.errors;
                    continue;
                }
                s.cycle_us.push_back(std::chrono::duration_cast<std::chrono::microseconds>(clock::now() - t0).count());
            }
        });
    }
    std::this_thread::sleep_for(duration);  // the measurement window itself
    stop = true;
    threads.clear();
    const double elapsed = std::chrono::duration<double>(clock::now() - started).count();

    return report_distinct(stats, elapsed, a, options, nlohmann::json::object());
}

/// Checks every flag, removes what an earlier (perhaps interrupted) run left, runs the
/// scenario and removes its keys again: bench leaves the Redis it measured as it found it.
int run_bench(const Globals& g, const BenchArgs& a, const CLI::App& cmd) {
    if (a.clients < 1 || a.clients > 1024) throw InputError{"--clients", "must be from 1 to 1024"};
    const auto duration = parse_duration_flag("--duration", a.duration);
    AcquireOptions options{.lease = parse_duration_flag("--lease", a.lease)};
    if (auto ok = options.validate(); !ok) throw InputError{"--lease", ok.error().message};
    apply_replica_flags(cmd, a.replicas, g, options);
    if (a.connections < 1 || a.connections > 64) throw InputError{"--connections", "must be from 1 to 64"};
    if (a.leases < 1 || a.leases > 1'000'000) throw InputError{"--leases", "must be from 1 to 1000000"};
    if (a.processes < 1 || a.processes > 64) throw InputError{"--processes", "must be from 1 to 64"};
    if (a.processes > 1 && a.scenario != "hot") throw InputError{"--processes", "applies to --scenario hot only"};
    if (a.keep && a.scenario != "hot") throw InputError{"--keep", "applies to --scenario hot only"};
    if (a.async && a.scenario == "keeper") throw InputError{"--async", "applies to --scenario distinct and hot"};
    if (a.async && a.keep)
        throw InputError{"--async", "cannot be combined with --keep (a HeldLease releases on its own connection)"};
    if (a.processes > a.clients)
        throw InputError{"--processes", "must not exceed --clients (each process runs at least one contender)"};
    using Scenario = int (*)(const Globals&, const BenchArgs&, std::chrono::milliseconds, const AcquireOptions&);
    Scenario scenario = a.scenario == "keeper"     ? run_keeper_bench
                        : a.scenario == "hot"      ? run_hot_bench
                        : a.scenario == "distinct" ? (a.async ? run_async_distinct_bench : run_distinct_bench)
                                                   : nullptr;
    if (scenario == nullptr) throw InputError{"--scenario", "must be distinct, hot or keeper"};
    const RedisTarget target = redis_target(g);
    if (a.as_child) return scenario(g, a, duration, options);  // the parent removes the keys
    if (auto removed = remove_bench_keys(target); !removed) return redis_failure(removed.error());
    const int code = scenario(g, a, duration, options);
    if (auto removed = remove_bench_keys(target); !removed)
        std::cerr << "fencelock: bench: could not remove its " << bench_prefix << "* keys ("
                  << removed.error().message() << "); the next bench run removes them\n";
    return code;
}

}  // namespace

std::int64_t percentile(const std::vector<std::int64_t>& sorted, double p) {
    if (sorted.empty()) return 0;
    auto index = static_cast<std::size_t>(p * static_cast<double>(sorted.size() - 1));
    return sorted[index];
}

void register_bench_command(Program& p) {
    auto args = std::make_shared<BenchArgs>();
    auto* cmd = p.app.add_subcommand("bench", "measure acquire+release cycles, or keeper renewals, per second");
    cmd->add_option("--scenario", args->scenario,
                    "distinct (acquire+release cycles), hot (contenders on one resource) or keeper (held leases)");
    cmd->add_option("--connections", args->connections, "distinct, hot: connections of the shared client (default 1)");
    cmd->add_flag("--fair", args->fair, "hot: contenders wait in the fair (FIFO) line");
    cmd->add_flag("--keep", args->keep,
                  "hot: contenders hold() the lock (kept lease, takes direct grants) instead of acquire()");
    cmd->add_option("--leases", args->leases, "keeper: leases held and renewed (default 10000)");
    cmd->add_option("--clients", args->clients, "concurrent lockers (threads) sharing one client (default 1)");
    cmd->add_option(
        "--processes", args->processes,
        "hot: spread the --clients contenders over this many processes, each with its own client (default 1)");
    cmd->add_flag("--as-child", args->as_child)->group("");  // a contender process of --processes
    cmd->add_flag("--async", args->async, "distinct, hot: --clients lockers on the async API, issued from one thread");
    cmd->add_option(
        "--runners", args->runners,
        "--async on a Redis Cluster: the async client's runner threads (default 4; one server and Sentinel use its event loop)");
    cmd->add_option("--duration", args->duration, "measurement time (default 5s)");
    cmd->add_option("--lease", args->lease, "lease length per cycle (default 10s)");
    add_replica_flags(*cmd, args->replicas);
    cmd->callback([&p, args, cmd] { p.run = [&p, args, cmd] { return run_bench(p.globals, *args, *cmd); }; });
}

}  // namespace fencelock::cli
