// Worker processes killed (SIGKILL) at three points of a job, and one stopped (SIGSTOP) past its
// lease: every job's effect lands exactly once and every job completes. The worker stops
// itself at the chosen point (queue_test_worker --pause-at) and says so with a marker file.
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "local_servers/child_process.hpp"
#include "queue_fixture.hpp"
#include "support/file_locks.hpp"
#include "support/process_state.hpp"

namespace fencelock::test_support {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;
using local::start_process;
using local::wait_process;

class CrashTest : public QueueTest {
protected:
    pid_t start_worker(const std::string& pause_at, bool resume = false, int lease_ms = 1000) {
        std::vector<std::string> argv{QUEUE_TEST_WORKER,
                                      "--redis",
                                      std::to_string(redis->port()),
                                      "--db",
                                      db->url(),
                                      "--queue",
                                      queue_name,
                                      "--dir",
                                      dir.string(),
                                      "--lease",
                                      std::to_string(lease_ms),
                                      "--visibility",
                                      "600"};
        if (!pause_at.empty()) argv.insert(argv.end(), {"--pause-at", pause_at});
        if (resume) argv.push_back("--resume");
        // stderr to a file too: an inherited one is ctest's pipe, which a worker outliving
        // its test keeps open, and ctest then waits for it until the test's timeout.
        const std::string n = std::to_string(++started);
        const pid_t pid = start_process(argv, (dir / ("out-" + n)).string(), (dir / ("err-" + n)).string());
        workers.push_back(pid);
        return pid;
    }
    int reap(pid_t pid) {
        std::erase(workers, pid);
        return wait_process(pid);
    }
    int stop_worker(pid_t pid) {
        ::kill(pid, SIGTERM);
        return reap(pid);
    }
    // A failed assertion returns early and leaves workers behind, one of them maybe stopped.
    void TearDown() override {
        for (pid_t pid : std::vector<pid_t>(workers)) {
            ::kill(pid, SIGKILL);
            reap(pid);
        }
        QueueTest::TearDown();
    }
    /// The decisions, the workers' stderr and, on SQLite, who holds the database's locks:
    /// what a failure needs to tell a slow store from a stuck one.
    std::string report() const {
        std::string out = "decisions:\n" + decisions();
        for (int n = 1; n <= started; ++n) {
            std::ifstream err(dir / ("err-" + std::to_string(n)));
            std::stringstream ss;
            ss << err.rdbuf();
            out += "worker " + std::to_string(n) + " stderr:\n" + ss.str();
        }
        if (GetParam() == Backend::sqlite) {
            const std::string file = db->url().substr(std::string("sqlite://").size());
            out += "locks on the database:\n" + file_lock_holders({file, file + "-shm", file + "-wal"});
        }
        return out;
    }
    std::string decisions() const {
        std::ifstream in(dir / "decisions");
        std::stringstream ss;
        ss << in.rdbuf();
        return ss.str();
    }
    bool all_done(std::uint64_t jobs) {
        const auto s = stats();
        return s.counter("completed") + s.counter("duplicates") == jobs && s.ready + s.in_flight + s.delayed == 0;
    }
    /// Three jobs; the first worker stops at `point` and is killed; a second worker finishes.
    void kill_at(const std::string& point) {
        std::vector<EnqueueResult> jobs;
        for (int i = 0; i < 3; ++i) jobs.push_back(enqueue("acct-" + std::to_string(i), "pay-" + std::to_string(i)));
        const pid_t a = start_worker(point);
        ASSERT_TRUE(eventually([&] { return fs::exists(dir / "paused"); }, 20s)) << decisions();
        ASSERT_EQ(::kill(a, SIGKILL), 0);
        reap(a);
        const pid_t b = start_worker("");
        const bool done = eventually([&] { return all_done(3); }, 30s);
        EXPECT_EQ(stop_worker(b), 0);
        ASSERT_TRUE(done) << report();
        for (const auto& j : jobs) EXPECT_EQ(effects(j.id), 1) << j.id;
        const auto s = stats();
        if (point == "committed") {
            // The committed job came back (never acknowledged) and was recognised by its key.
            EXPECT_EQ(s.counter("completed"), 2u);
            EXPECT_EQ(s.counter("duplicates"), 1u);
        } else {
            EXPECT_EQ(s.counter("completed"), 3u);
            EXPECT_EQ(s.counter("duplicates"), 0u);
        }
    }
    int started = 0;
    std::vector<pid_t> workers;  // started and not reaped yet
};

TEST_P(CrashTest, KilledAfterAcquiring) { kill_at("acquired"); }
TEST_P(CrashTest, KilledDuringTheMutation) { kill_at("mutation"); }
TEST_P(CrashTest, KilledAfterCommitBeforeAcknowledgement) { kill_at("committed"); }

TEST_P(CrashTest, StoppedPastItsLeaseItsWriteIsRejected) {
    install_history(*db);
    const auto job = enqueue("acct-stop", "pay-stop");
    const pid_t a = start_worker("acquired", /*resume=*/true, /*lease_ms=*/400);
    ASSERT_TRUE(eventually([&] { return fs::exists(dir / "paused"); }, 20s)) << decisions();
    ASSERT_EQ(::kill(a, SIGSTOP), 0);
    // Every thread of A stopped before it may go on: one still running could see the file
    // and start its transaction, then stop inside it holding SQLite's write lock.
    ASSERT_TRUE(eventually([&] { return process_stopped(a); }, 10s));
    std::ofstream(dir / "go").put('\n');  // A continues only once it runs again
    auto locks = client();
    const auto resource = ResourceName::make("acct-stop").value();
    const auto first_fence = locks.inspect(resource).value().last_fence;
    // A's lease runs out in Redis while A is frozen (its keeper is frozen too).
    ASSERT_TRUE(eventually([&] { return !locks.inspect(resource).value().holder.has_value(); }, 10s));

    const pid_t b = start_worker("");
    ASSERT_TRUE(eventually([&] { return stats().counter("completed") == 1; }, 30s)) << report();
    ASSERT_EQ(::kill(a, SIGCONT), 0);
    // A resumes with its old fence; the store refuses its write (the key already completed).
    ASSERT_TRUE(eventually([&] { return decisions().find("duplicate " + job.id) != std::string::npos; }, 20s))
        << decisions();
    EXPECT_EQ(stop_worker(a), 0);
    EXPECT_EQ(stop_worker(b), 0);
    EXPECT_EQ(effects(job.id), 1);
    const auto fences = history(*db, "acct-stop");
    ASSERT_EQ(fences.size(), 1u);
    EXPECT_GT(fences[0], first_fence.value());  // B's, newer than A's
    const auto s = stats();
    EXPECT_EQ(s.counter("completed"), 1u);
    EXPECT_EQ(s.ready + s.in_flight + s.delayed, 0u);
}

INSTANTIATE_TEST_SUITE_P(Backends, CrashTest, ::testing::Values(Backend::sqlite, Backend::postgresql), backend_name);

}  // namespace
}  // namespace fencelock::test_support
