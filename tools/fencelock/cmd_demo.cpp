// demo: the README's main job. Runs the same read-modify-write workload twice, with fencing and
// without, while injecting faults on a seeded schedule (workers paused past their lease, workers
// killed, the lock server paused), then reports what the store accepted and what was lost. The
// locks live in a private redis-server, or with --coordinator etcd in a private etcd.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <random>
#include <thread>

#include "cli.hpp"
#include "demo/events.hpp"
#include "demo/failover_run.hpp"
#include "demo/run_support.hpp"
#include "demo/timeline.hpp"
#include "demo/worker.hpp"
#include "fencelock/store.hpp"
#include "local_servers/child_process.hpp"
#include "local_servers/etcd_server.hpp"
#include "local_servers/redis_server.hpp"

namespace fencelock::cli {
namespace {

using namespace std::chrono_literals;
using demo::Fault;
using demo::History;
using demo::monotonic_ns;
using demo::Report;
using demo::wait_until_stopped;

struct DemoArgs {
    std::uint64_t seed = 42;
    int workers = 4;
    int records = 3;
    std::string coordinator = "redis";
    std::string duration;  // default 12s (Redis), 30s (etcd)
    std::string lease;     // default 400ms (Redis), 2s (etcd: whole seconds, 2 s at least)
    std::string db;
    std::string timeline;
    bool json = false;
    bool failover = false;
};

// The private server the demo's locks live in, which the fault schedule pauses.
class LockServer {
public:
    virtual ~LockServer() = default;
    virtual std::string url() const = 0;
    virtual void pause() = 0;
    virtual void resume() = 0;
    /// "Redis" or "etcd", for the progress lines.
    virtual std::string name() const = 0;
};

class RedisLockServer final : public LockServer {
public:
    RedisLockServer() { std::cerr << "  private redis-server on 127.0.0.1:" << server_.port() << "\n"; }
    std::string url() const override { return server_.url(); }
    void pause() override { server_.pause(); }
    void resume() override { server_.resume(); }
    std::string name() const override { return "Redis"; }

private:
    local::RedisServer server_;
};

class EtcdLockServer final : public LockServer {
public:
    EtcdLockServer() { std::cerr << "  private etcd on " << server_.endpoint() << "\n"; }
    std::string url() const override { return server_.url(); }
    void pause() override { server_.pause(); }
    void resume() override { server_.resume(); }
    std::string name() const override { return "etcd"; }

private:
    local::EtcdServer server_;
};

struct ModeResult {
    History history;
    Report report;
};

class ModeRun {
public:
    ModeRun(const DemoArgs& a, bool fenced, std::chrono::milliseconds lease, std::chrono::milliseconds duration,
            LockServer& locks, FencedStore& store, const std::string& db_url, const std::string& run_id,
            const std::filesystem::path& dir)
        : a_(a),
          fenced_(fenced),
          lease_(lease),
          duration_(duration),
          locks_(locks),
          store_(store),
          db_url_(db_url),
          dir_(dir),
          mode_(fenced ? "fenced" : "unfenced") {
        for (int i = 0; i < a.records; ++i) records_.push_back(run_id + ":" + mode_ + ":r" + std::to_string(i));
    }

    ModeResult run() {
        for (const auto& r : records_) {
            auto created = store_.create_resource(*ResourceName::make(r), "");
            if (!created) throw std::runtime_error("cannot create demo record: " + created.error().detail);
        }
        until_ns_ = monotonic_ns() + std::chrono::nanoseconds(duration_).count();
        for (int w = 0; w < a_.workers; ++w) spawn(w, 0);
        inject_faults();
        for (auto& wk : workers_) {
            ::kill(wk.pid, SIGCONT);  // in case an armed pause fired after the schedule ended
            ::kill(wk.pid, SIGTERM);
        }
        for (auto& wk : workers_) local::wait_process(wk.pid);
        return collect();
    }

private:
    struct Worker {
        pid_t pid;
        int generation;
    };

    void spawn(int w, int generation) {
        const auto file = dir_ / (mode_ + "-w" + std::to_string(w) + "-g" + std::to_string(generation) + ".jsonl");
        files_.push_back(file);
        const auto argv =
            demo::worker_command({.redis_url = locks_.url(),
                                  .db_url = db_url_,
                                  .key_prefix = mode_ + ":",
                                  .history_path = file.string(),
                                  .records = records_,
                                  .lease = lease_,
                                  .fenced = fenced_,
                                  .worker = w,
                                  .generation = generation,
                                  .seed = a_.seed * 1000 + static_cast<std::uint64_t>(w * 10 + generation),
                                  .until_ns = until_ns_});
        // The workers' own diagnostics (keeper warnings) go to a log beside their history.
        const pid_t pid = local::start_process(argv, "/dev/null", (dir_ / (mode_ + "-workers.log")).string());
        if (static_cast<std::size_t>(w) < workers_.size()) workers_[static_cast<std::size_t>(w)] = {pid, generation};
        else workers_.push_back({pid, generation});
    }

    // The schedule depends only on the seed, so both modes meet the same faults:
    //  35% a worker freezes right after checking its lease, before writing (the case fencing is for)
    //  20% a worker freezes at a random moment
    //  20% a worker is killed (SIGKILL) and restarted
    //  25% the lock server (Redis or etcd) freezes: for 3 leases (leases are lost) or for half a
    //      lease (ridden out)
    void inject_faults() {
        std::mt19937_64 rng(a_.seed);
        auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
        while (monotonic_ns() < until_ns_) {
            std::this_thread::sleep_for(std::chrono::milliseconds(pick(300, 800)));  // the schedule itself
            if (monotonic_ns() >= until_ns_) break;
            const int roll = pick(0, 99);
            const int w = pick(0, a_.workers - 1);
            const pid_t pid = workers_[static_cast<std::size_t>(w)].pid;
            const std::string name = "worker " + std::to_string(w);
            Fault f{roll < 55   ? "pause"
                    : roll < 75 ? "kill"
                                : "pause",
                    roll < 75 ? "w" + std::to_string(w) : "redis", monotonic_ns(), 0};
            if (roll < 35) {
                ::kill(pid, SIGUSR1);
                if (!wait_until_stopped(pid)) {
                    ::kill(pid, SIGUSR2);  // it never reached a write in time: disarm
                    if (!wait_until_stopped(pid, std::chrono::milliseconds(0))) continue;
                }
                f.start_ns = monotonic_ns();
                progress(name + " froze between its lease check and its write, for " +
                         std::to_string(lease_.count() * 3) + " ms");
                std::this_thread::sleep_for(lease_ * 3);
                ::kill(pid, SIGCONT);
            } else if (roll < 55) {
                progress(name + " paused (SIGSTOP) for " + std::to_string(lease_.count() * 3) + " ms");
                ::kill(pid, SIGSTOP);
                std::this_thread::sleep_for(lease_ * 3);
                ::kill(pid, SIGCONT);
            } else if (roll < 75) {
                progress(name + " killed (SIGKILL) and restarted");
                ::kill(pid, SIGKILL);
                local::wait_process(pid);
                spawn(w, workers_[static_cast<std::size_t>(w)].generation + 1);
            } else {
                const auto pause = roll < 90 ? lease_ * 3 : lease_ / 2;
                progress(locks_.name() + " paused for " + std::to_string(pause.count()) + " ms");
                locks_.pause();
                std::this_thread::sleep_for(pause);
                locks_.resume();
            }
            f.end_ns = monotonic_ns();
            faults_.push_back(f);
        }
    }

    ModeResult collect() {
        ModeResult out;
        out.history = demo::read_history_files(files_);
        out.history.faults = faults_;
        std::map<std::string, std::string> finals;
        for (const auto& r : records_) {
            auto rec = store_.read(*ResourceName::make(r));
            if (rec && *rec) finals[r] = (*rec)->value;
        }
        out.report = demo::make_report(out.history, finals);
        return out;
    }

    void progress(const std::string& what) const {
        const double t = duration_.count() / 1000.0 - static_cast<double>(until_ns_ - monotonic_ns()) / 1e9;
        std::cerr << "  [" << mode_ << " " << std::fixed << std::setprecision(1) << t << "s] " << what << "\n";
    }

    const DemoArgs& a_;
    bool fenced_;
    std::chrono::milliseconds lease_, duration_;
    LockServer& locks_;
    FencedStore& store_;
    std::string db_url_;
    std::filesystem::path dir_;
    std::string mode_;
    std::vector<std::string> records_;
    std::vector<Worker> workers_;
    std::vector<std::filesystem::path> files_;
    std::vector<Fault> faults_;
    std::int64_t until_ns_ = 0;
};

nlohmann::json to_json(const Report& r) {
    return {{"attempted", r.attempted},
            {"accepted", r.accepted},
            {"stale_rejected", r.stale_rejected},
            {"lost_updates", r.lost_updates},
            {"duplicates", r.duplicates},
            {"leases_lost", r.leases_lost},
            {"aborted", r.aborted},
            {"contended", r.contended},
            {"pauses", r.pauses},
            {"kills", r.kills}};
}

void print_table(const Report& fenced, const Report& unfenced) {
    auto row = [&](const char* name, std::uint64_t a, std::uint64_t b) {
        std::cout << "  " << std::left << std::setw(34) << name << std::right << std::setw(10) << a << std::setw(12)
                  << b << "\n";
    };
    std::cout << "\n  " << std::left << std::setw(34) << "" << std::right << std::setw(10) << "fenced" << std::setw(12)
              << "unfenced"
              << "\n";
    row("writes attempted", fenced.attempted, unfenced.attempted);
    row("writes accepted (acknowledged)", fenced.accepted, unfenced.accepted);
    row("stale writes rejected", fenced.stale_rejected, unfenced.stale_rejected);
    row("lost updates", fenced.lost_updates, unfenced.lost_updates);
    row("duplicated appends", fenced.duplicates, unfenced.duplicates);
    row("leases lost", fenced.leases_lost, unfenced.leases_lost);
    row("ops abandoned (lease lost first)", fenced.aborted, unfenced.aborted);
    row("pauses injected (worker or Redis)", fenced.pauses, unfenced.pauses);
    row("workers killed", fenced.kills, unfenced.kills);
}

/// --timeline must name a file that can be written: checked before the run, which takes
/// half a minute, rather than found out after it.
void require_writable_file(const std::string& flag, const std::string& path) {
    namespace fs = std::filesystem;
    const fs::path file(path);
    const fs::path dir = file.has_parent_path() ? file.parent_path() : fs::path(".");
    std::error_code ec;
    if (fs::is_directory(file, ec)) throw InputError{flag, path + " is a directory"};
    if (!fs::is_directory(dir, ec)) throw InputError{flag, "no such directory: " + dir.string()};
    const bool exists = fs::exists(file, ec);
    if (::access(exists ? file.c_str() : dir.c_str(), W_OK) != 0)
        throw InputError{flag, "cannot write " + path + ": " + std::strerror(errno)};
}

int run_demo(const DemoArgs& a) {
    if (a.workers < 2 || a.workers > 32) throw InputError{"--workers", "must be from 2 to 32"};
    if (a.records < 1 || a.records > 100) throw InputError{"--records", "must be from 1 to 100"};
    const bool on_etcd = a.coordinator == "etcd";
    const auto duration =
        parse_duration_flag("--duration", a.duration.empty() ? (on_etcd ? "30s" : "12s") : a.duration);
    const auto lease = parse_duration_flag("--lease", a.lease.empty() ? (on_etcd ? "2s" : "400ms") : a.lease);
    if (lease < 50ms) throw InputError{"--lease", "must be at least 50ms"};
    if (on_etcd && (lease < 2s || lease % 1s != 0ms))
        throw InputError{"--lease", "etcd keeps leases in whole seconds of at least 2s (e.g. 2s, 3s)"};
    if (duration < lease * 5) throw InputError{"--duration", "must be at least five leases long"};
    if (!a.db.empty()) {
        if (auto url = parse_database_url(a.db); !url) throw InputError{"--db", url.error().message};
    }

    const demo::ScratchDir scratch;
    const std::filesystem::path& dir = scratch.path();

    std::cerr << "fencelock demo: seed " << a.seed << ", " << a.workers << " worker processes, " << a.records
              << " records, lease " << lease.count() << " ms, " << duration.count() / 1000.0 << " s per mode, locks in "
              << (on_etcd ? "etcd" : "Redis") << "\n";
    std::unique_ptr<LockServer> locks;
    if (on_etcd) locks = std::make_unique<EtcdLockServer>();
    else locks = std::make_unique<RedisLockServer>();
    const std::string db_url = a.db.empty() ? "sqlite://" + (dir / "demo.db").string() : a.db;
    auto store = FencedStore::create({.url = db_url});
    if (!store) throw InputError{"--db", store.error().message};
    if (auto init = store->init(); !init) {
        std::cerr << "fencelock demo: database: " << init.error().detail << "\n";
        return fail(exit_unavailable, "database", init.error().code.message());
    }
    const std::string run_id = "demo-" + OwnerToken::generate().str().substr(0, 8);

    std::map<bool, ModeResult> results;
    for (bool fenced : {true, false}) {
        std::cerr << (fenced ? "run 1/2: with fencing\n" : "run 2/2: without fencing (the store accepts any write)\n");
        results[fenced] = ModeRun(a, fenced, lease, duration, *locks, *store, db_url, run_id, dir).run();
    }
    const Report& f = results[true].report;
    const Report& u = results[false].report;
    if (!a.timeline.empty()) {
        std::ofstream out(a.timeline);
        out << demo::render_timeline(
            {{"with fencing", results[true].history, f}, {"without fencing", results[false].history, u}});
        out.close();
        if (!out) return fail(exit_invalid_input, "invalid_input", "cannot write " + a.timeline, "--timeline");
        std::cerr << "timeline written to " << a.timeline << "\n";
    }
    if (a.json) {
        emit({{"fenced", to_json(f)}, {"unfenced", to_json(u)}, {"seed", a.seed}});
    } else {
        print_table(f, u);
        std::cout << "\n  With fencing: " << f.lost_updates << " lost updates, " << f.stale_rejected
                  << " stale writes rejected by the store.\n"
                  << "  Without fencing: " << u.lost_updates << " acknowledged appends were silently overwritten.\n";
    }
    return exit_ok;
}

}  // namespace

void register_demo_commands(Program& p) {
    auto args = std::make_shared<DemoArgs>();
    auto* cmd = p.app.add_subcommand("demo", "show, under injected faults, the damage fencing prevents");
    cmd->add_option("--seed", args->seed, "fault schedule seed (default 42)");
    cmd->add_option("--workers", args->workers, "worker processes (default 4)");
    cmd->add_option("--records", args->records, "shared records (default 3)");
    cmd->add_option("--coordinator", args->coordinator,
                    "where the locks live: redis (a private redis-server, the default) or etcd (a private etcd; "
                    "fences from Raft revisions, whole-second leases)")
        ->check(CLI::IsMember({"redis", "etcd"}));
    cmd->add_option("--duration", args->duration, "length of each of the two runs (default 12s; 30s on etcd)");
    cmd->add_option("--lease", args->lease, "lease length (default 400ms; 2s on etcd)");
    cmd->add_option("--db", args->db, "database URL (default: a private SQLite file)");
    cmd->add_option("--timeline", args->timeline, "write an HTML/SVG timeline to this file");
    cmd->add_flag("--json", args->json, "print the report as one JSON object");
    cmd->add_flag("--failover", args->failover,
                  "Sentinel failover with lost writes: plain INCR fences against fencelock's");
    cmd->callback([&p, args] {
        p.run = [args] {
            if (!args->timeline.empty()) require_writable_file("--timeline", args->timeline);
            if (!args->failover) return run_demo(*args);
            if (args->coordinator != "redis")
                throw InputError{"--coordinator",
                                 "--failover shows a Redis Sentinel failover that loses writes; "
                                 "etcd answers a grant only once a majority holds it"};
            return demo::run_failover_demo({.seed = args->seed,
                                            .workers = args->workers,
                                            .duration = args->duration.empty() ? "12s" : args->duration,
                                            .lease = args->lease.empty() ? "400ms" : args->lease,
                                            .db = args->db,
                                            .timeline = args->timeline,
                                            .json = args->json});
        };
    });

    auto w = std::make_shared<demo::WorkerArgs>();
    auto lease = std::make_shared<std::string>();
    auto unfenced = std::make_shared<bool>(false);
    auto* worker = p.app.add_subcommand("demo-worker", "")->group("");  // hidden: spawned by demo
    worker->add_option("--redis", w->redis_url)->required();
    worker->add_option("--db", w->db_url)->required();
    worker->add_option("--prefix", w->key_prefix);
    worker->add_option("--history", w->history_path)->required();
    worker->add_option("--record", w->records)->required();
    worker->add_option("--lease", *lease)->required();
    worker->add_option("--worker", w->worker);
    worker->add_option("--generation", w->generation);
    worker->add_option("--seed", w->seed);
    worker->add_option("--until-ns", w->until_ns)->required();
    worker->add_flag("--fenced", w->fenced);
    worker->add_flag("--unfenced", *unfenced);
    worker->add_flag("--incr-fences", w->incr_fences);
    worker->add_flag("--plain-reads", w->plain_reads);
    worker->add_flag("--freeze-at-write", w->freeze_at_write);
    worker->callback([&p, w, lease, unfenced] {
        p.run = [w, lease, unfenced] {
            w->lease = parse_duration_flag("--lease", *lease);
            if (*unfenced) w->fenced = false;
            return demo::run_worker(*w);
        };
    });
}

}  // namespace fencelock::cli
