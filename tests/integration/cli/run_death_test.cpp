// `fencelock run` must not leave CMD running without a lease: when fencelock dies (SIGKILL, as
// the OOM killer sends it) CMD and the rest of its process group die with it, and every signal
// that would end fencelock by default reaches CMD's group instead. The 100 ms bound is the one
// the requirement states: the kernel kills at once, nothing here waits for a timer.
#include <string>
#include <vector>

#include "integration/cli/run_fixture.hpp"
#include "support/process_state.hpp"

namespace fencelock::test_support {
namespace {

constexpr auto death_bound = 100ms;

TEST_F(RunTest, SigkillOfFencelockKillsCmdAtOnce) {
    const pid_t run = start(run_args("oom", {"--lease", "5s"}, std::string(announce) + "exec sleep 60"));
    const pid_t cmd = wait_started();
    ASSERT_GT(cmd, 0);
    ASSERT_FALSE(process_ended(cmd)) << "CMD runs while fencelock does";
    ASSERT_EQ(::kill(run, SIGKILL), 0);
    EXPECT_TRUE(eventually([&] { return process_ended(cmd); }, death_bound))
        << "CMD outlived fencelock, and so its lease";
    EXPECT_EQ(wait_exit(run), -1);
}

TEST_F(RunTest, SigkillOfFencelockKillsCmdsWholeGroup) {
    // CMD (a shell) starts a child of its own, then waits: both are in CMD's process group.
    const pid_t run = start(run_args("oom-group", {"--lease", "5s"},
                                     std::string(R"(sleep 60 & echo $! > "$1/child"; )") + announce + "wait"));
    const pid_t cmd = wait_started();
    ASSERT_GT(cmd, 0);
    const pid_t child = std::stoi(slurp(path("child")));
    ASSERT_FALSE(process_ended(child));
    ASSERT_EQ(::kill(run, SIGKILL), 0);
    EXPECT_TRUE(eventually([&] { return process_ended(cmd) && process_ended(child); }, death_bound))
        << "CMD " << (process_ended(cmd) ? "ended" : "still runs") << ", its child "
        << (process_ended(child) ? "ended" : "still runs");
    EXPECT_EQ(wait_exit(run), -1);
}

// CMD exits with the lease held while a child of its group still runs: the child is killed
// before the lease is released (it used to run on, reported as a "straggler", with no lease).
TEST_F(RunTest, WhatIsLeftOfCmdsGroupDiesBeforeTheLeaseIsReleased) {
    auto r = local::run_process(run_args("leftover", {"--lease", "5s"}, R"(sleep 60 & echo $! > "$1/child"; exit 0)"));
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    const pid_t child = std::stoi(slurp(path("child")));
    EXPECT_TRUE(eventually([&] { return process_ended(child); }, death_bound))
        << "CMD's child outlived CMD and the lease";
    EXPECT_FALSE(lock_exists("leftover"));
}

TEST_F(RunTest, SigusrToFencelockIsForwardedAndTheLockReleased) {
    const pid_t run = start(run_args("usr1", {"--lease", "5s"}, std::string(announce) + "exec sleep 60"));
    const pid_t cmd = wait_started();
    ASSERT_GT(cmd, 0);
    ASSERT_EQ(::kill(run, SIGUSR1), 0);
    EXPECT_TRUE(eventually([&] { return process_ended(cmd); }, death_bound)) << "SIGUSR1 did not reach CMD";
    EXPECT_EQ(wait_exit(run), 128 + SIGUSR1) << "CMD died from the forwarded signal";
    EXPECT_FALSE(lock_exists("usr1"));
    json j = summary(slurp(path("fencelock.err")));
    EXPECT_EQ(j["forwarded"], json::array({"SIGUSR1"}));
    EXPECT_EQ(j["result"], "interrupted");
    EXPECT_EQ(j["cmd_signal"], "SIGUSR1");
    EXPECT_EQ(j["released"], true);
    EXPECT_EQ(j["lease_lost"], false);
}

// Every catchable signal whose default action ends a process, other than the ones fencelock
// ignores for itself (SIGPIPE, SIGXCPU, SIGXFSZ) and the faults of its own code: CMD traps each
// one and records it, and keeps running under the lease until SIGTERM. CMD surviving the whole
// sequence also shows nothing of fencelock's (a thread ending, say) kills it early.
TEST_F(RunTest, EveryTerminatingSignalIsForwardedToCmd) {
    std::vector<int> sent = {SIGHUP, SIGUSR1, SIGUSR2, SIGALRM, SIGVTALRM, SIGPROF, SIGPOLL, SIGSTKFLT, SIGPWR};
    for (int sig = SIGRTMIN; sig <= SIGRTMAX; ++sig) sent.push_back(sig);
    std::string numbers;
    for (int sig : sent) numbers += " " + std::to_string(sig);
    // The background sleep keeps `wait` blocking; it ignores the signals the group receives.
    std::string script = "trap ''" + numbers + "; sleep 600 & ";
    for (int sig : sent)
        script += "trap 'echo " + std::to_string(sig) + R"( >> "$1/got"' )" + std::to_string(sig) + "; ";
    script += "trap 'kill $! 2>/dev/null; exit 0' TERM; " + std::string(announce) + "while :; do wait; done";
    const pid_t run = start(run_args("all", {"--lease", "5s"}, script));
    ASSERT_GT(wait_started(), 0);
    for (std::size_t i = 0; i < sent.size(); ++i) {
        ASSERT_EQ(::kill(run, sent[i]), 0);
        ASSERT_TRUE(eventually([&] { return lines(slurp(path("got"))).size() == i + 1; }))
            << "signal " << sent[i] << " not forwarded; got:\n"
            << slurp(path("got"));
    }
    std::vector<std::string> got;
    for (int sig : sent) got.push_back(std::to_string(sig));
    EXPECT_EQ(lines(slurp(path("got"))), got);
    EXPECT_TRUE(lock_exists("all")) << "forwarding leaves the lease held";
    ASSERT_EQ(::kill(run, SIGTERM), 0);
    EXPECT_EQ(wait_exit(run), 0);
    json j = summary(slurp(path("fencelock.err")));
    EXPECT_EQ(j["forwarded"].size(), sent.size() + 1);
    EXPECT_EQ(j["released"], true);
}

}  // namespace
}  // namespace fencelock::test_support
