// What does the fence check cost? Each pair runs the same amount of I/O with and without the
// guard, through the same prepared-statement path, on both backends, in one process:
//   guarded_write   FencedStore::write (UPDATE ... WHERE last_fence < $2), always applied
//   stale_write     FencedStore::write rejected (UPDATE touching 0 rows + SELECT last_fence)
//   plain_update    UPDATE ... SET value WHERE resource = $1 (no fence)
//   guarded_txn     FencedStore::transact with one application UPDATE: on PostgreSQL three round
//                   trips, [BEGIN + guard UPDATE], the mutation, [guard_intact + COMMIT]
//   two_step_txn    the guard before issue 16, replayed with the same session's statements:
//                   BEGIN, SELECT ... FOR UPDATE, the mutation, fence UPDATE, COMMIT (five)
//   plain_txn       BEGIN, the same application UPDATE, COMMIT (three)
//   guard_first_stmt_txn  PostgreSQL only, not what transact() does: a replay of the guard riding
//                   with the application's first statement, [BEGIN + erroring guard + mutation],
//                   [guard_intact + COMMIT] (two round trips). It prices that proposal, which
//                   would call the mutation before the guard has answered (see its comment)
// On PostgreSQL each line also reports server_us: the CPU time per operation of the backends
// serving this bench (/proc/<pid>/schedstat). With the CPU column (the client's) it is the cost
// of an operation in CPU, which a loaded machine's wall time hides.
// Run: taskset -c 0 build/bench/store/store_bench --benchmark_min_time=2
#include <benchmark/benchmark.h>

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <memory>

#include "fencelock/store.hpp"
#include "local_servers/postgres_server.hpp"
#include "store/session.hpp"
#include "store/sql.hpp"

namespace {

using namespace fencelock;

struct Target {
    std::string name;
    std::string url;
    std::unique_ptr<FencedStore> store;
    std::unique_ptr<detail::Session> raw;  // the plain path: same driver, no fence
    std::uint64_t next_fence = 1;
    std::vector<std::string> backends;  // PostgreSQL: the server pids of both paths' connections
};

/// CPU time the backends have used so far, in nanoseconds (first field of schedstat).
double server_cpu_ns(const Target& t) {
    double sum = 0;
    for (const auto& pid : t.backends) {
        std::ifstream in("/proc/" + pid + "/schedstat");
        double ns = 0;
        in >> ns;
        sum += ns;
    }
    return sum;
}

using BenchFn = void (*)(benchmark::State&, Target*);

void add(const std::string& name, BenchFn fn, Target* t) {
    benchmark::RegisterBenchmark((name + "/" + t->name).c_str(), [fn, t](benchmark::State& state) {
        const double before = server_cpu_ns(*t);
        fn(state, t);
        if (!t->backends.empty())
            state.counters["server_us"] =
                benchmark::Counter((server_cpu_ns(*t) - before) / 1e3, benchmark::Counter::kAvgIterations);
    })->UseRealTime();
}

ResourceName resource() { return ResourceName::make("bench").value(); }

void guarded_write(benchmark::State& state, Target* t) {
    for (auto _ : state) {
        const std::uint64_t fence = t->next_fence++;
        auto r = t->store->write(resource(), FencingToken(fence), "value" + std::to_string(fence));
        if (!r || r->status != WriteStatus::applied) state.SkipWithError("write not applied");
    }
}

void stale_write(benchmark::State& state, Target* t) {
    for (auto _ : state) {
        auto r = t->store->write(resource(), FencingToken(1), "value");
        if (!r || r->status != WriteStatus::stale) state.SkipWithError("write not stale");
    }
}

void plain_update(benchmark::State& state, Target* t) {
    // The value must change every time: SQLite skips writing a byte-identical row (no WAL
    // frame, no fsync), which would make the unguarded side look 40x cheaper than it is.
    std::uint64_t n = 0;
    for (auto _ : state) {
        const std::string value = "value" + std::to_string(++n);
        auto r = t->raw->exec(
            "UPDATE fencelock_resources SET value = $2, updated_at = CURRENT_TIMESTAMP WHERE resource = $1",
            {detail::Param(std::string_view("bench")), detail::Param(std::string_view(value))});
        if (!r || r->affected != 1) state.SkipWithError("update failed");
    }
}

constexpr std::string_view app_update = "UPDATE bench_app SET n = n + 1 WHERE id = 1";

void guarded_txn(benchmark::State& state, Target* t) {
    const Mutation m = [](Transaction& tx) -> std::expected<void, StoreError> {
        if (auto r = tx.exec(app_update); !r) return std::unexpected(r.error());
        return {};
    };
    for (auto _ : state) {
        auto r = t->store->transact(resource(), FencingToken(t->next_fence++), {}, m);
        if (!r || r->status != TransactStatus::committed) state.SkipWithError("transact failed");
    }
}

void plain_txn(benchmark::State& state, Target* t) {
    const bool sqlite = t->raw->backend() == StoreBackend::sqlite;
    for (auto _ : state) {
        bool ok = t->raw->exec(sqlite ? "BEGIN IMMEDIATE" : "BEGIN", {}).has_value();
        ok = ok && t->raw->exec(app_update, {}).has_value();
        ok = ok && t->raw->exec("COMMIT", {}).has_value();
        if (!ok) state.SkipWithError("transaction failed");
    }
}

// The guard transact() ran before issue 16, statement for statement (no pool, no argument
// checks: if anything, a little cheaper than it was), for old-vs-new figures from one run.
void two_step_txn(benchmark::State& state, Target* t) {
    const bool sqlite = t->raw->backend() == StoreBackend::sqlite;
    const detail::Param r(std::string_view("bench"));
    for (auto _ : state) {
        const detail::Param fence(static_cast<std::int64_t>(t->next_fence++));
        bool ok = t->raw->exec(sqlite ? "BEGIN IMMEDIATE" : "BEGIN ISOLATION LEVEL READ COMMITTED", {}).has_value();
        auto guard = t->raw->exec(sqlite ? "SELECT last_fence, last_owner, value FROM fencelock_resources "
                                           "WHERE resource = $1"
                                         : "SELECT last_fence, last_owner, value FROM fencelock_resources "
                                           "WHERE resource = $1 FOR UPDATE",
                                  {r});
        ok = ok && guard && guard->rows.size() == 1;
        ok = ok && t->raw->exec(app_update, {}).has_value();
        auto up = t->raw->exec(
            "UPDATE fencelock_resources SET last_fence = $2, last_owner = NULL, "
            "updated_at = CURRENT_TIMESTAMP WHERE resource = $1 AND last_fence < $2",
            {r, fence});
        ok = ok && up && up->affected == 1;
        ok = ok && t->raw->exec("COMMIT", {}).has_value();
        if (!ok) state.SkipWithError("two-step transaction failed");
    }
}

// The proposal priced here: send the guard with the mutation's first statement. The guard must
// then fail (not return zero rows) when stale, so the pipeline skips the application statement
// behind it: the CTE raises the fence and a division by the raised row count errors on none.
// transact() cannot do this today without calling the mutation before it knows the fence is
// not stale, and without knowing tx.value() when the mutation starts.
constexpr std::string_view erroring_guard =
    "WITH raised AS (UPDATE fencelock_resources SET last_fence = $2, last_owner = NULL, "
    "updated_at = CURRENT_TIMESTAMP WHERE resource = $1 AND last_fence < $2 RETURNING value) "
    "SELECT (SELECT value FROM raised), 1 / (SELECT count(*) FROM raised)::int";

void guard_first_stmt_txn(benchmark::State& state, Target* t) {
    const detail::Param r(std::string_view("bench"));
    for (auto _ : state) {
        const detail::Param guard_params[] = {r, detail::Param(static_cast<std::int64_t>(t->next_fence++))};
        const detail::Statement opening[] = {
            {"BEGIN ISOLATION LEVEL READ COMMITTED", {}}, {erroring_guard, guard_params}, {app_update, {}}};
        const detail::Statement closing[] = {{detail::sql::guard_intact, guard_params}, {detail::sql::commit, {}}};
        auto opened = t->raw->exec_batch(opening);
        bool ok = !opened.error && opened.rows.size() == 3;
        auto closed = ok ? t->raw->exec_batch(closing) : detail::BatchResult{};
        ok = ok && !closed.error && closed.rows.size() == 2;
        if (!ok) {
            (void)t->raw->exec("ROLLBACK", {});
            state.SkipWithError("guard-first transaction failed");
        }
    }
}

std::unique_ptr<Target> prepare(std::string name, std::string url) {
    auto t = std::make_unique<Target>();
    t->name = std::move(name);
    t->url = url;
    t->store = std::make_unique<FencedStore>(FencedStore::create(StoreOptions{.url = url}).value());
    if (auto v = t->store->init(); !v) throw std::runtime_error("init failed: " + v.error().detail);
    (void)t->store->create_resource(resource(), "value");
    auto parsed = parse_database_url(url).value();
    t->raw = std::move(detail::open_session(parsed, StoreOptions{.url = url}, false).value());
    if (!t->raw->exec_script("CREATE TABLE IF NOT EXISTS bench_app (id INTEGER PRIMARY KEY, n INTEGER NOT NULL);"
                             "INSERT INTO bench_app (id, n) VALUES (1, 0) ON CONFLICT (id) DO NOTHING"))
        throw std::runtime_error("bench table");
    // Both connections are open now (the store keeps its session in the pool between calls).
    if (t->raw->backend() == StoreBackend::postgresql) {
        auto pids = t->raw->exec(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
            "AND backend_type = 'client backend'",
            {});
        if (pids)
            for (const auto& row : pids->rows) t->backends.push_back(row.at(0).value_or(""));
    }
    return t;
}

}  // namespace

int main(int argc, char** argv) {
    benchmark::Initialize(&argc, argv);
    fencelock::local::PostgresServer postgres;
    const auto dir = std::filesystem::temp_directory_path() / ("fencelock-bench-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    std::vector<std::unique_ptr<Target>> targets;
    targets.push_back(prepare("sqlite", "sqlite://" + (dir / "bench.db").string()));
    targets.push_back(prepare("postgresql", postgres.url()));
    for (auto& t : targets) {
        Target* p = t.get();
        add("plain_update", plain_update, p);
        add("guarded_write", guarded_write, p);
        add("stale_write", stale_write, p);
        add("plain_txn", plain_txn, p);
        add("two_step_txn", two_step_txn, p);
        add("guarded_txn", guarded_txn, p);
        if (t->raw->backend() == StoreBackend::postgresql) add("guard_first_stmt_txn", guard_first_stmt_txn, p);
    }
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    targets.clear();
    std::filesystem::remove_all(dir);
    return 0;
}
