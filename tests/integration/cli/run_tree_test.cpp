// Processes of CMD that left its process group still die with its lease: GNU timeout and `set -m`
// give their children groups of their own, and a double fork's orphan is nobody's descendant.
// Each script starts such a process (an `escaped` sleep that writes its pid), then the lease
// is lost, CMD exits, or fencelock itself is killed; the escaped process must be gone too.
#include <fstream>
#include <string>

#include "integration/cli/run_fixture.hpp"
#include "support/process_state.hpp"

namespace fencelock::test_support {
namespace {

// The escaped process: a shell that writes its pid to DIR/escaped and becomes `sleep 300`.
constexpr const char* escapee =
    R"(sh -c 'echo $$ > "$0/escaped.tmp" && mv "$0/escaped.tmp" "$0/escaped"; exec sleep 300' "$1")";

class RunTreeTest : public RunTest {
protected:
    pid_t wait_escaped() {
        if (!eventually([&] { return fs::exists(path("escaped")); })) {
            ADD_FAILURE() << "the escaped process never started";
            return -1;
        }
        const pid_t pid = std::stoi(slurp(path("escaped")));
        escaped_ = pid;
        return pid;
    }
    void TearDown() override {
        if (escaped_ > 0) ::kill(escaped_, SIGKILL);  // a failed test leaves nothing behind
        RunTest::TearDown();
    }
    // Not in CMD's group: what the group kill alone missed.
    bool outside_group(pid_t pid, pid_t cmd) const { return ::getpgid(pid) != cmd; }

private:
    pid_t escaped_ = -1;
};

TEST_F(RunTreeTest, TimeoutsChildDiesWhenTheLeaseIsLost) {
    const pid_t run = start(run_args("tree-timeout", {"--lease", "3s", "--grace", "1s"},
                                     std::string(announce) + "timeout 60 " + escapee + "; exit 0"));
    const pid_t cmd = wait_started();
    const pid_t escaped = wait_escaped();
    ASSERT_GT(escaped, 0);
    ASSERT_TRUE(outside_group(escaped, cmd)) << "timeout kept its child in CMD's group: proves nothing";
    ASSERT_EQ(redis->cli({"DEL", "lock:{tree-timeout}"}), "1");
    EXPECT_EQ(wait_exit(run), 76);
    EXPECT_TRUE(eventually([&] { return process_ended(escaped); }, 1s)) << "timeout's child outlived the lease";
}

TEST_F(RunTreeTest, ASetMJobDiesWhenCmdExits) {
    // bash makes a process group per job under `set -m` without a terminal (dash needs one).
    std::ofstream(path("job.sh")) << "set -m\n"
                                  << escapee << " &\n"
                                  << R"(while [ ! -e "$1/escaped" ]; do sleep 0.01; done)"
                                  << "\n";
    const pid_t run =
        start(run_args("tree-setm", {"--lease", "5s"}, std::string(announce) + R"(bash "$1/job.sh" "$1"; exit 0)"));
    const pid_t cmd = wait_started();
    const pid_t escaped = wait_escaped();
    ASSERT_GT(escaped, 0);
    ASSERT_TRUE(outside_group(escaped, cmd)) << "set -m kept the job in CMD's group: proves nothing";
    EXPECT_EQ(wait_exit(run), 0);
    EXPECT_TRUE(eventually([&] { return process_ended(escaped); }, 1s)) << "a set -m job outlived CMD and its lease";
    EXPECT_FALSE(lock_exists("tree-setm"));
}

TEST_F(RunTreeTest, ADoubleForkedSetsidOrphanDiesWhenCmdExits) {
    // The subshell exits at once: its child is an orphan, reparented away from CMD, in a
    // session of its own.
    const pid_t run = start(run_args("tree-orphan", {"--lease", "5s"},
                                     std::string("(setsid ") + escapee + " &) ; " + announce +
                                         R"(while [ ! -e "$1/escaped" ]; do sleep 0.01; done; exit 0)"));
    const pid_t cmd = wait_started();
    const pid_t escaped = wait_escaped();
    ASSERT_GT(escaped, 0);
    ASSERT_TRUE(outside_group(escaped, cmd));
    EXPECT_EQ(wait_exit(run), 0);
    EXPECT_TRUE(eventually([&] { return process_ended(escaped); }, 1s)) << "the orphan outlived CMD and its lease";
}

TEST_F(RunTreeTest, TimeoutsChildDiesWhenFencelockIsKilled) {
    const pid_t run =
        start(run_args("tree-oom", {"--lease", "5s"}, std::string(announce) + "timeout 60 " + escapee + "; exit 0"));
    const pid_t cmd = wait_started();
    const pid_t escaped = wait_escaped();
    ASSERT_GT(escaped, 0);
    ASSERT_TRUE(outside_group(escaped, cmd));
    ASSERT_EQ(::kill(run, SIGKILL), 0);
    EXPECT_EQ(wait_exit(run), -1);
    EXPECT_TRUE(eventually([&] { return process_ended(escaped); }, 1s)) << "timeout's child outlived fencelock";
}

}  // namespace
}  // namespace fencelock::test_support
