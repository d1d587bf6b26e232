// The failover schedule, the same in both runs:
//   1. warm up: the workers take turns on one record through the master;
//   2. cut replication: the replica stops hearing the master, so every fence issued from now
//      on is lost at promotion (the counter the replica holds stays where it was);
//   3. two workers freeze, one after the other, between their lease check and their write,
//      each holding a fence issued after the cut (the second one's is the higher);
//   4. kill -9 the master, resume the replica, wait for the sentinels to promote it;
//   5. as soon as a lease taken after the kill has a write accepted, thaw the second frozen
//      worker, then the first: each writes its pre-failover fence.
// With INCR fences the promoted counter reissues the lost fences, so a new holder writes with
// a fence the frozen worker already holds (or a lower one), and the frozen worker's higher
// fence then overwrites it. fencelock's fences never go backwards, so the store refuses both.
#include "demo/failover_run.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <deque>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <thread>

#include "cli.hpp"
#include "coordinator/redis/keys.hpp"
#include "demo/events.hpp"
#include "demo/failover_report.hpp"
#include "demo/run_support.hpp"
#include "demo/timeline.hpp"
#include "demo/worker.hpp"
#include "fencelock/duration.hpp"
#include "fencelock/store.hpp"
#include "local_servers/child_process.hpp"
#include "local_servers/sentinel_group.hpp"

namespace fencelock::demo {
namespace {

using namespace std::chrono_literals;
using std::chrono::milliseconds;

struct RunResult {
    History history;
    Report base;
    FailoverReport failover;
    int frozen = 0;  ///< workers caught at their write (2 when the schedule went as planned)
};

class FailoverRun {
public:
    FailoverRun(const FailoverDemoArgs& a, bool incr, milliseconds lease, milliseconds duration, FencedStore& store,
                std::string db_url, std::string record, const std::filesystem::path& dir)
        : a_(a),
          incr_(incr),
          lease_(lease),
          duration_(duration),
          store_(store),
          db_url_(std::move(db_url)),
          record_(std::move(record)),
          dir_(dir),
          mode_(incr ? "incr" : "fencelock") {}

    RunResult run() {
        group_ = std::make_unique<local::SentinelGroup>();
        // The failover grace covers the workers' lease. The group is in its first term (its
        // master started empty and was never promoted), so the workers start at once.
        url_ = group_->url("failover_grace=" + format_duration(lease_));
        progress("master :" + std::to_string(group_->server(0).port()) +
                 ", replica :" + std::to_string(group_->server(1).port()) + ", 3 sentinels" +
                 ", workers follow the master through " + url_);
        if (auto created = store_.create_resource(*ResourceName::make(record_), ""); !created)
            throw std::runtime_error("cannot create demo record: " + created.error().detail);
        start_ns_ = monotonic_ns();
        for (int w = 0; w < a_.workers; ++w) spawn(w);
        fail_over();
        const auto end_ns = std::max(start_ns_ + std::chrono::nanoseconds(duration_).count(),
                                     monotonic_ns() + std::chrono::nanoseconds(lease_ * 2).count());
        std::this_thread::sleep_for(std::chrono::nanoseconds(std::max<std::int64_t>(0, end_ns - monotonic_ns())));
        stop_workers([](const Worker&) { return true; });
        RunResult out = collect();
        group_.reset();
        return out;
    }

private:
    struct Worker {
        int index;
        pid_t pid;
        bool frozen = false;
        bool running = true;
    };

    void spawn(int w) {
        const auto file = dir_ / (mode_ + "-w" + std::to_string(w) + ".jsonl");
        files_.push_back(file);
        // The parent stops the workers (SIGTERM): their own deadline is far away.
        const auto until = monotonic_ns() + std::chrono::nanoseconds(duration_ + 120s).count();
        const auto argv = worker_command({.redis_url = url_,
                                          .db_url = db_url_,
                                          .key_prefix = mode_ + ":",
                                          .history_path = file.string(),
                                          .records = {record_},
                                          .lease = lease_,
                                          .fenced = true,
                                          .worker = w,
                                          .seed = a_.seed * 1000 + static_cast<std::uint64_t>(w * 10),
                                          .until_ns = until,
                                          .incr_fences = incr_,
                                          .plain_reads = true,
                                          .freeze_at_write = true});
        const pid_t pid = local::start_process(argv, "/dev/null", (dir_ / (mode_ + "-workers.log")).string());
        workers_.push_back({w, pid});
    }

    void fail_over() {
        std::this_thread::sleep_for(std::max<milliseconds>(lease_ * 3, duration_ / 4));
        const std::size_t old_master = *group_->master();
        const std::size_t replica = old_master == 0 ? 1 : 0;
        group_->cut_replication(replica);
        const auto cut_ns = mark(cut_kind, "replication to the replica cut: fences issued from now on are lost");
        wait_for("three leases taken after the cut", 10s, [&](const History& h) {
            return std::count_if(h.operations.begin(), h.operations.end(),
                                 [&](const Operation& op) { return op.acquired_ns > cut_ns && op.fence != 0; }) >= 3;
        });
        std::vector<Worker*> frozen;
        for (int i = 0; i < 2; ++i)
            if (Worker* w = freeze_one()) frozen.push_back(w);
        group_->server(old_master).kill();
        const auto kill_ns = mark(kill_kind, "master killed (SIGKILL)");
        group_->server(replica).resume();
        // Nothing writes to the replica before its promotion: this is the counter it takes over.
        counter_after_ = read_counter(group_->server(replica));
        group_->wait_for_new_master(old_master);
        mark(promoted_kind, "the sentinels promoted the replica (counter " + std::to_string(counter_after_) + ")");
        wait_for("a write accepted for a lease taken after the kill", 20s, [&](const History& h) {
            return std::any_of(h.operations.begin(), h.operations.end(),
                               [&](const Operation& op) { return op.acquired_ns > kill_ns && op.result == "applied"; });
        });
        // The later frozen worker holds the higher fence: thaw it first, then the other.
        for (auto it = frozen.rbegin(); it != frozen.rend(); ++it) thaw(**it, kill_ns);
        stop_workers([](const Worker& w) { return w.frozen; });  // they have made their point
    }

    // Arms every running worker; the first to reach its write stops, the others are disarmed.
    Worker* freeze_one() {
        for (auto& w : workers_)
            if (w.running && !w.frozen) ::kill(w.pid, SIGUSR1);
        const auto deadline = std::chrono::steady_clock::now() + lease_ * 6;
        Worker* caught = nullptr;
        while (!caught && std::chrono::steady_clock::now() < deadline) {
            for (auto& w : workers_)
                if (w.running && !w.frozen && wait_until_stopped(w.pid, 0ms)) caught = &w;
            std::this_thread::sleep_for(1ms);
        }
        for (auto& w : workers_)
            if (w.running && !w.frozen && &w != caught) ::kill(w.pid, SIGUSR2);
        if (!caught) {
            progress("no worker reached its write in time to be frozen");
            return nullptr;
        }
        caught->frozen = true;
        frozen_.push_back({"pause", "w" + std::to_string(caught->index), monotonic_ns(), 0});
        progress("worker " + std::to_string(caught->index) + " froze between its lease check and its write");
        return caught;
    }

    void thaw(Worker& w, std::int64_t kill_ns) {
        for (auto& f : frozen_)
            if (f.target == "w" + std::to_string(w.index) && f.end_ns == 0) f.end_ns = monotonic_ns();
        ::kill(w.pid, SIGCONT);
        progress("worker " + std::to_string(w.index) + " thawed: it writes with its pre-failover fence");
        wait_for("the thawed worker's write", 10s, [&](const History& h) {
            return std::any_of(h.operations.begin(), h.operations.end(), [&](const Operation& op) {
                return op.worker == w.index && op.acquired_ns < kill_ns && op.write_ns > kill_ns;
            });
        });
        ::kill(w.pid, SIGTERM);  // it has made its point; reaped with the others
    }

    template <class Which>
    void stop_workers(Which which) {
        for (auto& w : workers_)
            if (w.running && which(w)) {
                ::kill(w.pid, SIGCONT);  // in case an armed freeze fired late
                ::kill(w.pid, SIGTERM);
            }
        for (auto& w : workers_)
            if (w.running && which(w)) {
                local::wait_process(w.pid);
                w.running = false;
            }
    }

    std::uint64_t read_counter(local::RedisServer& server) const {
        const std::string key = incr_ ? incr_fence_key(mode_ + ":", record_)
                                      : detail::make_keys(mode_ + ":", *ResourceName::make(record_)).fence;
        const std::string value = server.cli({"GET", key});
        try {
            return value.empty() ? 0 : std::stoull(value);
        } catch (const std::exception&) {
            return 0;
        }
    }

    // The workers' history, polled until `done` holds (bounded: the report shows what happened).
    template <class Done>
    void wait_for(const std::string& what, milliseconds limit, Done done) {
        const auto deadline = std::chrono::steady_clock::now() + limit;
        while (!done(read_history_files(files_))) {
            if (std::chrono::steady_clock::now() >= deadline) {
                progress("gave up waiting for " + what);
                return;
            }
            std::this_thread::sleep_for(2ms);
        }
    }

    std::int64_t mark(const char* kind, const std::string& what) {
        const auto now = monotonic_ns();
        marks_.push_back({kind, failover_target, now, now});
        progress(what);
        return now;
    }

    RunResult collect() {
        RunResult out;
        out.history = read_history_files(files_);
        out.history.faults = marks_;
        out.history.faults.insert(out.history.faults.end(), frozen_.begin(), frozen_.end());
        std::map<std::string, std::string> finals;
        if (auto rec = store_.read(*ResourceName::make(record_)); rec && *rec) finals[record_] = (*rec)->value;
        out.base = make_report(out.history, finals);
        out.failover = make_failover_report(out.history, out.base, counter_after_,
                                            incr_ ? FenceSource::incr_counter : FenceSource::redis_clock);
        out.frozen = static_cast<int>(frozen_.size());
        return out;
    }

    void progress(const std::string& what) const {
        const double t = start_ns_ == 0 ? 0.0 : static_cast<double>(monotonic_ns() - start_ns_) / 1e9;
        std::cerr << "  [" << mode_ << " " << std::fixed << std::setprecision(1) << t << "s] " << what << "\n";
    }

    const FailoverDemoArgs& a_;
    bool incr_;
    milliseconds lease_, duration_;
    FencedStore& store_;
    std::string db_url_, record_;
    std::filesystem::path dir_;
    std::string mode_;
    std::unique_ptr<local::SentinelGroup> group_;
    std::string url_;             ///< the group's URL with the failover grace
    std::deque<Worker> workers_;  // stable addresses: frozen workers are held by pointer
    std::vector<std::filesystem::path> files_;
    std::vector<Fault> marks_, frozen_;
    std::uint64_t counter_after_ = 0;
    std::int64_t start_ns_ = 0;
};

nlohmann::json ms_or_null(const std::optional<milliseconds>& d) {
    return d ? nlohmann::json(d->count()) : nlohmann::json(nullptr);
}

nlohmann::json to_json(const RunResult& r) {
    const FailoverReport& f = r.failover;
    const bool counter = f.source == FenceSource::incr_counter;
    return {{"fence_source", counter ? "incr_counter" : "redis_clock"},
            {"counter_before", f.counter_before},
            {"counter_after", f.counter_after},
            // A regression only where fences count on from the counter: null for clock-based ones.
            {"counter_regression", counter ? nlohmann::json(f.counter_regression) : nlohmann::json(nullptr)},
            {"first_fence_after", f.first_fence_after ? nlohmann::json(*f.first_fence_after) : nlohmann::json(nullptr)},
            {"fences_after_failover", fences_after_failover(f)},
            {"fences_issued_twice", f.fences_issued_twice},
            {"attempted", f.attempted},
            {"accepted", f.accepted},
            {"stale_accepted", f.stale_accepted},
            {"stale_rejected", f.stale_rejected},
            {"lost_updates", f.lost_updates},
            {"kill_to_promotion_ms", ms_or_null(f.kill_to_promotion)},
            {"kill_to_first_write_ms", ms_or_null(f.kill_to_first_write)},
            {"frozen_workers", r.frozen}};
}

void print_table(const RunResult& incr, const RunResult& ours) {
    auto cell = [](const nlohmann::json& v) {
        return v.is_null() ? std::string("-") : v.is_string() ? v.get<std::string>() : v.dump();
    };
    const auto a = to_json(incr), b = to_json(ours);
    const std::pair<const char*, const char*> rows[] = {
        {"highest fence before the failover", "counter_before"},
        {"counter after promotion", "counter_after"},
        {"first fence after the failover", "first_fence_after"},
        {"fences after the failover", "fences_after_failover"},
        {"fences issued twice", "fences_issued_twice"},
        {"writes accepted", "accepted"},
        {"stale writes accepted", "stale_accepted"},
        {"stale writes rejected", "stale_rejected"},
        {"lost updates", "lost_updates"},
        {"kill -> promotion (ms)", "kill_to_promotion_ms"},
        {"kill -> first accepted write (ms)", "kill_to_first_write_ms"}};
    std::cout << "\n  " << std::left << std::setw(36) << "" << std::right << std::setw(20) << "plain INCR fences"
              << std::setw(32) << "fencelock fences"
              << "\n";
    for (const auto& [name, key] : rows)
        std::cout << "  " << std::left << std::setw(36) << name << std::right << std::setw(20) << cell(a[key])
                  << std::setw(32) << cell(b[key]) << "\n";
}

}  // namespace

int run_failover_demo(const FailoverDemoArgs& a) {
    if (a.workers < 3 || a.workers > 32) throw cli::InputError{"--workers", "must be from 3 to 32 with --failover"};
    const auto duration = cli::parse_duration_flag("--duration", a.duration);
    const auto lease = cli::parse_duration_flag("--lease", a.lease);
    if (lease < 50ms) throw cli::InputError{"--lease", "must be at least 50ms"};
    if (duration < lease * 5) throw cli::InputError{"--duration", "must be at least five leases long"};
    if (!a.db.empty()) {
        if (auto url = parse_database_url(a.db); !url) throw cli::InputError{"--db", url.error().message};
    }
    const ScratchDir scratch;
    const std::string db_url = a.db.empty() ? "sqlite://" + (scratch.path() / "demo.db").string() : a.db;
    auto store = FencedStore::create({.url = db_url});
    if (!store) throw cli::InputError{"--db", store.error().message};
    if (auto init = store->init(); !init) {
        std::cerr << "fencelock demo: database: " << init.error().detail << "\n";
        return cli::fail(cli::exit_unavailable, "database", init.error().code.message());
    }
    const std::string run_id = "failover-" + OwnerToken::generate().str().substr(0, 8);
    std::cerr << "fencelock demo --failover: " << a.workers << " worker processes on one record, lease "
              << lease.count() << " ms, at least " << duration.count() / 1000.0 << " s per run\n";

    std::map<bool, RunResult> results;
    for (bool incr : {true, false}) {
        std::cerr << (incr ? "run 1/2: fences from a plain INCR counter\n" : "run 2/2: fencelock's fences\n");
        const std::string record = run_id + (incr ? ":incr" : ":fencelock");
        results[incr] = FailoverRun(a, incr, lease, duration, *store, db_url, record, scratch.path()).run();
    }
    const RunResult& incr = results[true];
    const RunResult& ours = results[false];
    if (!a.timeline.empty()) {
        std::ofstream out(a.timeline);
        out << render_timeline({{"failover, plain INCR fences", incr.history, incr.base},
                                {"failover, fencelock fences", ours.history, ours.base}});
        std::cerr << "timeline written to " << a.timeline << "\n";
    }
    if (a.json) {
        cli::emit({{"plain_counter", to_json(incr)}, {"fencelock", to_json(ours)}, {"seed", a.seed}});
        return cli::exit_ok;
    }
    print_table(incr, ours);
    std::cout << "\n  Plain INCR: the promoted master's counter " << fences_after_failover(incr.failover) << ": "
              << incr.failover.fences_issued_twice << " fences were issued twice and\n  the store accepted "
              << incr.failover.stale_accepted << " stale writes.\n  fencelock: fences come from Redis's clock (TIME in "
              << "microseconds), so the promoted master's\n  continue from its own clock ("
              << fences_after_failover(ours.failover) << "): " << ours.failover.fences_issued_twice
              << " fences issued twice,\n  " << ours.failover.stale_accepted << " stale writes accepted, "
              << ours.failover.stale_rejected << " rejected.\n";
    return cli::exit_ok;
}

}  // namespace fencelock::demo
