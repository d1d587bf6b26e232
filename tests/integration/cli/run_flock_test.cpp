// `fencelock run` beside flock(1): one test per row of README's "fencelock run beside flock"
// table, each run the way a script ported from flock would run it (no --json).
#include "integration/cli/run_fixture.hpp"

namespace fencelock::test_support {
namespace {

using local::run_process;

class RunLikeFlock : public RunTest {
protected:
    /// Another owner holds R for `lease`; its owner token.
    OwnerToken hold_elsewhere(const std::string& r, std::chrono::milliseconds lease = 60s) {
        if (!holder_) holder_.emplace(client());
        auto held = holder_->try_acquire(resource(r), AcquireOptions{.lease = lease});
        EXPECT_TRUE(held && held->acquired());
        return held->lease->owner;
    }
    std::optional<LockClient> holder_;
};

// Row "waits for the lock": as flock, etcdctl lock and consul lock, no flag needed.
TEST_F(RunLikeFlock, WaitsForTheLockByDefault) {
    const OwnerToken other = hold_elsewhere("nightly");
    const long before = connected_clients();
    const pid_t run = start(plain_run("nightly", {}, std::string(announce)));
    // fencelock is connected and waiting; CMD cannot have started while the other holds R.
    ASSERT_TRUE(eventually([&] { return connected_clients() > before; }));
    EXPECT_FALSE(fs::exists(path("started")));
    ASSERT_EQ(holder_->release(resource("nightly"), other).value(), ReleaseStatus::released);
    EXPECT_EQ(wait_exit(run), 0) << slurp(path("fencelock.err"));
    EXPECT_TRUE(fs::exists(path("started"))) << "CMD ran once the other released";
}

// Row "one attempt": -n (flock -n); not acquired is exit 75, CMD never runs, nothing printed.
TEST_F(RunLikeFlock, NonblockMakesOneAttemptAndSaysNothing) {
    hold_elsewhere("nightly");
    for (const char* flag : {"-n", "--nonblock"}) {
        const auto r = run_process(plain_run("nightly", {flag}, R"(touch "$1/ran")"));
        EXPECT_EQ(r.exit_code, 75) << flag;
        EXPECT_EQ(r.err, "") << flag << ": silent, as flock -n";
        EXPECT_EQ(r.out, "");
    }
    EXPECT_FALSE(fs::exists(path("ran")));
}

// Row "bounded wait": -w D (flock -w); gives up with 75 once D has passed without a grant.
TEST_F(RunLikeFlock, WaitBoundGivesUpWithSeventyFive) {
    hold_elsewhere("nightly");
    const auto r = run_process(plain_run("nightly", {"-w", "300ms"}, R"(touch "$1/ran")"));
    EXPECT_EQ(r.exit_code, 75);
    EXPECT_EQ(r.err, "");
    EXPECT_FALSE(fs::exists(path("ran")));
}

// Row "exit code when not acquired": -E N (flock -E), for -n and -w alike.
TEST_F(RunLikeFlock, ConflictExitCodeIsChosenWithE) {
    hold_elsewhere("nightly");
    EXPECT_EQ(run_process(plain_run("nightly", {"-n", "-E", "1"}, "true")).exit_code, 1) << "flock's own default";
    EXPECT_EQ(run_process(plain_run("nightly", {"-w", "200ms", "--conflict-exit-code", "0"}, "true")).exit_code, 0);
    const std::string before = redis->snapshot();
    const auto bad = run_process(plain_run("nightly", {"-n", "-E", "256"}, "true"));
    EXPECT_EQ(bad.exit_code, 2);
    EXPECT_NE(bad.err.find("--conflict-exit-code"), std::string::npos) << bad.err;
    EXPECT_EQ(redis->snapshot(), before);
}

// Row "the command's exit code": passed on, as flock and etcdctl lock do.
TEST_F(RunLikeFlock, PassesOnTheCommandsExitCode) {
    const auto r = run_process(plain_run("nightly", {}, "exit 3"));
    EXPECT_EQ(r.exit_code, 3);
    EXPECT_EQ(r.err, "");
}

// Row "output of its own": none on success; the summary only with --json.
TEST_F(RunLikeFlock, PrintsNothingOfItsOwnUnlessAskedForJson) {
    auto r = run_process(plain_run("nightly", {}, "echo from-cmd"));
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_EQ(r.out, "from-cmd\n");
    EXPECT_EQ(r.err, "") << "cron would mail this";
    r = run_process(plain_run("nightly", {"--json"}, "echo from-cmd"));
    EXPECT_EQ(r.out, "from-cmd\n");
    EXPECT_EQ(summary(r.err)["result"], "completed");
}

// Row "lease": 30 s by default, renewed while the command runs; the command sees its fence.
TEST_F(RunLikeFlock, DefaultLeaseIsThirtySecondsWithTheFenceInTheEnvironment) {
    const auto r = run_process(plain_run("nightly", {},
                                         std::string(FENCELOCK_CLI) + " --redis " + redis->url() +
                                             R"( inspect "$FENCELOCK_RESOURCE" > "$1/inspect"; )" +
                                             R"(echo "$FENCELOCK_FENCE" > "$1/fence")"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json held = json::parse(slurp(path("inspect")), nullptr, false);
    EXPECT_EQ(held.value("lease_ms", 0), 30000) << held;
    EXPECT_EQ(slurp(path("fence")), std::to_string(held.value("fence", 0ULL)) + "\n");
}

// Row "lock lost while the command runs": the command is stopped (SIGTERM, then SIGKILL before
// the lease can end) and run exits 76, with one line saying why.
TEST_F(RunLikeFlock, ALostLeaseStopsTheCommandWithSeventySix) {
    const pid_t run = start(plain_run("nightly", {"--lease", "2s", "--max-hold", "2500ms", "--grace", "400ms"},
                                      std::string(announce) + "exec sleep 60"));
    const pid_t cmd = wait_started();
    ASSERT_GT(cmd, 0);
    EXPECT_EQ(wait_exit(run), 76);
    EXPECT_TRUE(process_gone(cmd));
    const std::string err = slurp(path("fencelock.err"));
    EXPECT_EQ(err, "fencelock: lease on nightly lost (max_hold_exceeded); CMD was stopped\n")
        << "one line of text, without --json (the JSON log starts at --log-level warn)";
}

// Errors without --json are one line of text, still on stderr; stdout stays the command's.
TEST_F(RunLikeFlock, ErrorsAreTextWithoutJson) {
    const std::string before = redis->snapshot();
    const auto r = run_process(plain_run("nightly", {"--lease", "5"}, "true"));
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(lines(r.err).size(), 1u) << r.err;
    EXPECT_NE(r.err.find("--lease"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find('{'), std::string::npos) << r.err;
    EXPECT_EQ(redis->snapshot(), before);
}

}  // namespace
}  // namespace fencelock::test_support
