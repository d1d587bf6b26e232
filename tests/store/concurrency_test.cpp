// Concurrent writers with fences arriving out of order, as threads and as processes running
// the fencelock CLI. A trigger keeps an independent history of every accepted change in
// commit order; it must show strictly increasing fences that match what the writers were told,
// ending at last_fence.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <fstream>
#include <latch>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "store_fixture.hpp"

extern char** environ;

namespace fencelock::test_support {
namespace {

using F = FencingToken;

class ConcurrencyTest : public StoreTest {
protected:
    /// Fences 1..n shuffled and dealt to `workers` workers: each sees them out of order.
    static std::vector<std::vector<std::uint64_t>> deal(std::uint64_t n, int workers, unsigned seed) {
        std::vector<std::uint64_t> all(n);
        for (std::uint64_t i = 0; i < n; ++i) all[i] = i + 1;
        std::mt19937 rng(seed);
        std::shuffle(all.begin(), all.end(), rng);
        std::vector<std::vector<std::uint64_t>> out(static_cast<std::size_t>(workers));
        for (std::size_t i = 0; i < all.size(); ++i) out[i % out.size()].push_back(all[i]);
        return out;
    }

    /// The history checks shared by the thread and process variants.
    void check_history(const std::string& resource, const std::set<std::uint64_t>& accepted) {
        const auto h = history(*db, resource);
        ASSERT_FALSE(h.empty());
        for (std::size_t i = 1; i < h.size(); ++i)
            ASSERT_LT(h[i - 1], h[i]) << "accepted fences must strictly increase";
        EXPECT_EQ(std::set<std::uint64_t>(h.begin(), h.end()), accepted)
            << "the writers' view of what was applied matches the database's history";
        EXPECT_EQ(h.size(), accepted.size());
        const Record r = read(resource);
        EXPECT_EQ(r.last_fence, F(*accepted.rbegin()));
        EXPECT_EQ(r.last_fence, F(h.back()));
        EXPECT_EQ(r.value, "w" + std::to_string(h.back()));
    }
};

TEST_P(ConcurrencyTest, ThreadsWithOutOfOrderFences) {
    create("hot");
    install_history(*db);
    constexpr int workers = 8;
    const auto plan = deal(400, workers, 12345);
    std::latch start(workers);
    std::mutex mutex;
    std::set<std::uint64_t> accepted;
    std::atomic<int> errors{0};
    std::vector<std::thread> threads;
    for (int w = 0; w < workers; ++w) {
        threads.emplace_back([&, w] {
            start.arrive_and_wait();
            for (std::uint64_t f : plan[static_cast<std::size_t>(w)]) {
                auto r = store->write(res("hot"), F(f), "w" + std::to_string(f));
                if (!r) {
                    ++errors;
                    ADD_FAILURE() << r.error().detail;
                    continue;
                }
                if (r->status == WriteStatus::applied) {
                    std::lock_guard lock(mutex);
                    accepted.insert(f);
                } else {
                    EXPECT_EQ(r->status, WriteStatus::stale);
                    EXPECT_GE(r->last_fence, F(f)) << "stale means a fence >= ours was already accepted";
                }
            }
        });
    }
    for (auto& t : threads) t.join();
    ASSERT_EQ(errors.load(), 0);
    EXPECT_TRUE(accepted.contains(400)) << "the newest fence can never be stale";
    check_history("hot", accepted);
}

// The same race through transact(): each mutation appends its fence to an application log. The
// guard's row lock serializes the transactions on the resource, so the log is in commit order
// and must hold strictly increasing fences, exactly the committed ones; stale attempts left
// nothing in it (their guard raise was rolled back with them).
TEST_P(ConcurrencyTest, TransactsWithOutOfOrderFences) {
    create("hot");
    install_history(*db);
    db->execute(db->backend() == Backend::postgresql
                    ? "CREATE TABLE test_log (seq bigserial PRIMARY KEY, fence bigint NOT NULL)"
                    : "CREATE TABLE test_log (seq INTEGER PRIMARY KEY AUTOINCREMENT, fence INTEGER NOT NULL)");
    constexpr int workers = 4;
    const auto plan = deal(120, workers, 4242);
    const Mutation append = [](Transaction& tx) -> std::expected<void, StoreError> {
        auto r = tx.exec("INSERT INTO test_log (fence) VALUES ($1)", {std::to_string(tx.fence().value())});
        if (!r) return std::unexpected(r.error());
        return {};
    };
    std::latch start(workers);
    std::mutex mutex;
    std::set<std::uint64_t> committed;
    std::vector<std::thread> threads;
    for (int w = 0; w < workers; ++w) {
        threads.emplace_back([&, w] {
            start.arrive_and_wait();
            for (std::uint64_t f : plan[static_cast<std::size_t>(w)]) {
                auto r = store->transact(res("hot"), F(f), {}, append);
                if (!r) {
                    ADD_FAILURE() << r.error().detail;
                    continue;
                }
                if (r->status == TransactStatus::committed) {
                    std::lock_guard lock(mutex);
                    committed.insert(f);
                } else {
                    EXPECT_EQ(r->status, TransactStatus::stale);
                    EXPECT_GE(r->last_fence, F(f)) << "stale means a fence >= ours was already accepted";
                }
            }
        });
    }
    for (auto& t : threads) t.join();
    EXPECT_TRUE(committed.contains(120)) << "the newest fence can never be stale";
    std::vector<std::uint64_t> log;
    std::istringstream in(db->query("SELECT fence FROM test_log ORDER BY seq"));
    for (std::string line; std::getline(in, line);) log.push_back(std::stoull(line));
    for (std::size_t i = 1; i < log.size(); ++i) ASSERT_LT(log[i - 1], log[i]) << "the log is in commit order";
    EXPECT_EQ(std::set<std::uint64_t>(log.begin(), log.end()), committed);
    EXPECT_EQ(log.size(), committed.size());
    EXPECT_EQ(history(*db, "hot"), log) << "one fence raise per committed transaction, in the same order";
    EXPECT_EQ(read("hot").last_fence, F(120));
}

pid_t spawn_shell(const std::string& script) {
    std::vector<std::string> args{"/bin/sh", "-c", script};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = -1;
    if (posix_spawn(&pid, "/bin/sh", nullptr, nullptr, argv.data(), environ) != 0) return -1;
    return pid;
}

TEST_P(ConcurrencyTest, ProcessesWithOutOfOrderFences) {
    create("hot");
    install_history(*db);
    constexpr int workers = 4;
    const auto plan = deal(60, workers, 777);
    const auto dir = std::filesystem::temp_directory_path() / ("fencelock-procs-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    struct RemoveDir {
        std::filesystem::path p;
        ~RemoveDir() {
            std::error_code ec;
            std::filesystem::remove_all(p, ec);
        }
    } cleanup{dir};
    // Each worker is a shell loop running `fencelock store write` once per fence; every output
    // line is "<fence> <json>".
    std::vector<pid_t> pids;
    for (int w = 0; w < workers; ++w) {
        std::string fences;
        for (auto f : plan[static_cast<std::size_t>(w)]) fences += std::to_string(f) + " ";
        const std::string script = "for f in " + fences +
                                   "; do printf '%s ' $f; '" FENCELOCK_CLI "' store write --db '" + db->url() +
                                   "' --resource hot --fence $f --value w$f 2>/dev/null || true; done > '" +
                                   (dir / std::to_string(w)).string() + "'";
        pids.push_back(spawn_shell(script));
        ASSERT_GT(pids.back(), 0);
    }
    for (pid_t pid : pids) {
        int status = 0;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    std::set<std::uint64_t> accepted;
    int lines = 0;
    for (int w = 0; w < workers; ++w) {
        std::ifstream in(dir / std::to_string(w));
        for (std::string line; std::getline(in, line);) {
            ++lines;
            std::istringstream ls(line);
            std::uint64_t fence = 0;
            ls >> fence;
            std::string json;
            std::getline(ls, json);
            auto out = nlohmann::json::parse(json);
            const std::string result = out.at("result");
            ASSERT_TRUE(result == "applied" || result == "stale") << line;
            if (result == "applied") accepted.insert(fence);
            else EXPECT_GE(out.at("last_fence").get<std::uint64_t>(), fence) << line;
        }
    }
    EXPECT_EQ(lines, 60);
    EXPECT_TRUE(accepted.contains(60));
    check_history("hot", accepted);
}

INSTANTIATE_TEST_SUITE_P(Backends, ConcurrencyTest, ::testing::Values(Backend::sqlite, Backend::postgresql),
                         backend_name);

}  // namespace
}  // namespace fencelock::test_support
