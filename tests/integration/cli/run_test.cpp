// `fencelock run`: a command wrapped in a lease, against a real redis-server and real processes
// (the fixture, RunTest, is in run_fixture.hpp).
#include <sys/stat.h>

#include "integration/cli/run_fixture.hpp"
#include "support/scrape.hpp"

namespace fencelock::test_support {
namespace {

using steady = std::chrono::steady_clock;
using local::free_port;
using local::run_process;

TEST_F(RunTest, CmdExitCodePassesThroughWithItsLeaseInTheEnvironment) {
    // A stale value in fencelock's own environment must not reach CMD.
    auto r = run_process(run_args("job", {"--lease", "5s"},
                                  R"(printf '%s\n%s\n%s\n' "$FENCELOCK_RESOURCE" "$FENCELOCK_OWNER" )"
                                  R"("$FENCELOCK_FENCE" > "$1/env"; exit 7)"),
                         {"FENCELOCK_FENCE=999"});
    EXPECT_EQ(r.exit_code, 7) << r.err;
    json j = summary(r.err);
    EXPECT_EQ(j["acquired"], true);
    EXPECT_EQ(j["lease_lost"], false);
    EXPECT_FALSE(j.contains("loss_reason"));
    EXPECT_EQ(j["exit_code"], 7);
    EXPECT_EQ(j["resource"], "job");
    const std::uint64_t fence = j["fence"];
    EXPECT_EQ(j["released"], true);
    EXPECT_TRUE(j["renewals"].is_number_unsigned());
    EXPECT_FALSE(lock_exists("job")) << "released when CMD ended";
    EXPECT_EQ(redis->cli({"GET", "fence:{job}"}), std::to_string(fence));

    const auto env = lines(slurp(path("env")));
    ASSERT_EQ(env.size(), 3u);
    EXPECT_EQ(env[0], "job");
    EXPECT_EQ(env[1], j["owner"].get<std::string>());
    EXPECT_EQ(env[2], std::to_string(j["fence"].get<std::uint64_t>()));
}

// `run R -- sh -c 'printf ...' > dump.csv` left the summary as the last line of dump.csv.
TEST_F(RunTest, StdoutHoldsCmdsBytesAloneAndTheSummaryIsStderrsLastLine) {
    auto r = run_process(run_args("out", {"--lease", "5s"}, R"(printf 'a,b\n1,2'; echo to-stderr >&2)"));
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_EQ(r.out, "a,b\n1,2") << "no newline added, nothing appended";
    const auto err = lines(r.err);
    ASSERT_EQ(err.size(), 2u) << r.err;
    EXPECT_EQ(err[0], "to-stderr");
    EXPECT_EQ(json::parse(err[1])["exit_code"], 0);
    EXPECT_EQ(json::parse(err[1])["result"], "completed");
}

TEST_F(RunTest, ErrorsAndOutcomesWithoutCmdLeaveStdoutEmptyToo) {
    auto holder = client();
    ASSERT_TRUE(holder.try_acquire(resource("taken"), AcquireOptions{.lease = 30s}).value().acquired());
    for (const auto& args : {run_args("taken", {"--lease", "5s", "-n"}, "exit 0"),  // 75
                             run_args("r", {"--lease", "5"}, "exit 0"),             // 2, found by fencelock
                             run_args("r", {"--lease"}, "exit 0"),                  // 2, found by the parser
                             cli({"--timeout", "200ms", "--redis", "redis://127.0.0.1:" + std::to_string(free_port()),
                                  "run", "r", "--lease", "5s", "--", "true"})}) {  // 4
        auto r = run_process(args);
        EXPECT_NE(r.exit_code, 0);
        EXPECT_EQ(r.out, "") << "exit " << r.exit_code;
        EXPECT_TRUE(summary(r.err).is_object());
    }
}

TEST_F(RunTest, CmdKilledBySignalExitsWith128PlusTheSignal) {
    auto r = run_process(run_args("sig", {"--lease", "5s"}, "kill -KILL $$"));
    EXPECT_EQ(r.exit_code, 128 + SIGKILL);
    json j = summary(r.err);
    EXPECT_EQ(j["cmd_signal"], "SIGKILL");
    EXPECT_EQ(j["lease_lost"], false);
    EXPECT_FALSE(lock_exists("sig"));
}

// Metrics of a running `fencelock run`, scraped over HTTP: one acquisition, renewals while CMD
// runs, then exactly one lease lost (not_owner) and one failed renewal when the lock is taken.
TEST_F(RunTest, ServesMetricsThatMatchTheScenario) {
    const auto port = free_port();
    // CMD ignores SIGTERM, so after the loss fencelock stays up until the SIGKILL its grace
    // allows (at most 1.47 s with a 3 s lease): the scrape that sees the loss is read below.
    // Renewals come every second; a loaded machine (ASan, parallel tests) does not miss one
    // long enough to lose the lease by expiry, which the counts below rule out.
    const pid_t run = start(run_args(
        "metered", {"--lease", "3s", "--grace", "1400ms", "--metrics-addr", "127.0.0.1:" + std::to_string(port)},
        std::string(announce) + "trap '' TERM; exec sleep 600"));
    ASSERT_GT(wait_started(), 0);
    auto scrape = [&] { return "\n" + http_get(static_cast<unsigned short>(port), "/metrics"); };
    ASSERT_TRUE(
        eventually([&] { return sample(scrape(), "fencelock_lock_renew_total{result=\"renewed\"}") >= 3; }, 30s));
    ASSERT_EQ(redis->cli({"DEL", "lock:{metered}"}), "1");
    std::string text;
    ASSERT_TRUE(eventually([&] {
        text = scrape();
        return sample(text, "fencelock_lock_lease_lost_total{reason=\"not_owner\"}") == 1;
    }));
    EXPECT_EQ(sample(text, "fencelock_lock_acquire_total{result=\"acquired\"}"), 1);
    EXPECT_EQ(sample(text, "fencelock_lock_acquire_total{result=\"error\"}"), 0);
    EXPECT_EQ(sample(text, "fencelock_lock_renew_total{result=\"not_owner\"}"), 1);
    EXPECT_EQ(sample(text, "fencelock_lock_lease_lost_total{reason=\"expired\"}"), 0);
    EXPECT_EQ(sample(text, "fencelock_lock_hold_duration_seconds_count"), 1);
    EXPECT_EQ(wait_exit(run), 76);
    EXPECT_EQ(summary(slurp(path("fencelock.err")))["killed"], true) << "SIGKILL once the grace allowed no more";
}

// `--metrics-addr` used to add about 2 s to every exit: stopping civetweb waits for its
// listener's poll(), which a connection restarts with a 2 s timeout. So from a scrape on, the
// old exit could not come sooner than 2 s later, whatever the load; now it follows CMD's.
TEST_F(RunTest, MetricsServerDoesNotDelayTheExit) {
    const auto port = free_port();
    const std::string fifo = path("go");
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    const pid_t run = start(run_args("exit", {"--lease", "5s", "--metrics-addr", "127.0.0.1:" + std::to_string(port)},
                                     std::string(announce) + "read line < " + fifo));
    ASSERT_GT(wait_started(), 0);
    ASSERT_TRUE(eventually([&] { return !http_get(static_cast<unsigned short>(port), "/metrics").empty(); }));
    const auto scraped = steady::now();
    {
        std::ofstream go(fifo);  // CMD ends
        go << "done\n";
    }
    EXPECT_EQ(wait_exit(run), 0);
    // Correctness bound, not a benchmark: the old exit came 2 s after the scrape at the soonest.
    EXPECT_LT(seconds_since(scraped), 1.5);
    EXPECT_EQ(summary(slurp(path("fencelock.err")))["result"], "completed");
}

TEST_F(RunTest, LeaseDeletedMidRunStopsCmdAndExits76) {
    const pid_t run =
        start(run_args("del", {"--lease", "4s", "--grace", "1s"}, std::string(announce) + "exec sleep 60"));
    const pid_t cmd = wait_started();
    ASSERT_GT(cmd, 0);
    const auto deleted = steady::now();
    ASSERT_EQ(redis->cli({"DEL", "lock:{del}"}), "1");
    EXPECT_EQ(wait_exit(run), 76);
    const double elapsed = seconds_since(deleted);
    EXPECT_TRUE(process_gone(cmd));
    json j = summary(slurp(path("fencelock.err")));
    EXPECT_EQ(j["lease_lost"], true);
    EXPECT_EQ(j["loss_reason"], "not_owner");
    EXPECT_EQ(j["exit_code"], 76);
    EXPECT_EQ(j["cmd_signal"], "SIGTERM");
    EXPECT_EQ(j["killed"], false);
    // Correctness bound, not a benchmark: loss noticed within a renewal interval, then SIGTERM.
    EXPECT_LT(elapsed, 4.0 + 1.0 + 5.0);
}

TEST_F(RunTest, LeaseTakenByAnotherOwnerStopsCmdAndLeavesTheirLockAlone) {
    const pid_t run = start(run_args("taken", {"--lease", "1s"}, std::string(announce) + "exec sleep 60"));
    const pid_t cmd = wait_started();
    ASSERT_GT(cmd, 0);
    const auto taken = steady::now();
    ASSERT_EQ(redis->cli({"DEL", "lock:{taken}"}), "1");
    auto other = client();
    auto got = other.try_acquire(resource("taken"), AcquireOptions{.lease = 30s});
    ASSERT_TRUE(got && got->acquired());
    EXPECT_EQ(wait_exit(run), 76);
    EXPECT_LT(seconds_since(taken), 1.0 + 2.0 + 5.0);
    EXPECT_TRUE(process_gone(cmd));
    json j = summary(slurp(path("fencelock.err")));
    EXPECT_EQ(j["lease_lost"], true);
    EXPECT_EQ(j["loss_reason"], "not_owner");
    EXPECT_EQ(j["released"], false);
    EXPECT_GT(got->lease->fence.value(), j["fence"].get<std::uint64_t>());

    auto info = other.inspect(resource("taken"));
    ASSERT_TRUE(info && info->holder);
    EXPECT_EQ(info->holder->owner, got->lease->owner.str());
    EXPECT_EQ(info->holder->fence, got->lease->fence);
    EXPECT_EQ(info->last_fence, got->lease->fence);
}

TEST_F(RunTest, RedisGoneMidRunExpiresTheLeaseAndStopsCmd) {
    // Fail closed: no confirmed renewal before the safe-until deadline means no lease.
    const pid_t run = start(cli({"--timeout", "200ms", "run", "gone", "--lease", "1s", "--", "sh", "-c",
                                 std::string(announce) + "exec sleep 60", "sh", dir.string()}));
    const pid_t cmd = wait_started();
    ASSERT_GT(cmd, 0);
    const auto killed = steady::now();
    redis->kill();
    EXPECT_EQ(wait_exit(run), 76);
    EXPECT_LT(seconds_since(killed), 1.0 + 2.0 + 5.0);
    EXPECT_TRUE(process_gone(cmd));
    json j = summary(slurp(path("fencelock.err")));
    EXPECT_EQ(j["lease_lost"], true);
    EXPECT_EQ(j["loss_reason"], "expired");
    EXPECT_EQ(j["released"], false);
    EXPECT_TRUE(j.contains("release_error"));
}

TEST_F(RunTest, CmdIgnoringSigtermIsKilledAfterGrace) {
    const pid_t run = start(run_args("stubborn", {"--lease", "4s", "--grace", "1s"},
                                     std::string("trap '' TERM; ") + announce + "exec sleep 60"));
    const pid_t cmd = wait_started();
    ASSERT_GT(cmd, 0);
    const auto deleted = steady::now();
    ASSERT_EQ(redis->cli({"DEL", "lock:{stubborn}"}), "1");
    EXPECT_EQ(wait_exit(run), 76);
    const double elapsed = seconds_since(deleted);
    EXPECT_TRUE(process_gone(cmd));
    json j = summary(slurp(path("fencelock.err")));
    EXPECT_EQ(j["lease_lost"], true);
    EXPECT_EQ(j["killed"], true);
    EXPECT_EQ(j["cmd_signal"], "SIGKILL");
    EXPECT_GE(elapsed, 1.0) << "SIGKILL only once the grace is over";
    EXPECT_LT(elapsed, 1.0 + 1.0 + 5.0);
}

TEST_F(RunTest, SigtermToFencelockIsForwardedAndTheLockReleased) {
    const pid_t run = start(
        run_args("term", {"--lease", "1s"},
                 std::string(R"(trap 'echo got-term > "$1/term"; exit 0' TERM; )") + announce + "sleep 60 & wait"));
    const pid_t cmd = wait_started();
    ASSERT_GT(cmd, 0);
    ASSERT_TRUE(lock_exists("term"));
    ASSERT_EQ(::kill(run, SIGTERM), 0);
    EXPECT_EQ(wait_exit(run), 0) << "CMD's own exit code";
    EXPECT_EQ(slurp(path("term")), "got-term\n");
    EXPECT_TRUE(process_gone(cmd));
    EXPECT_FALSE(lock_exists("term"));
    json j = summary(slurp(path("fencelock.err")));
    EXPECT_EQ(j["lease_lost"], false);
    EXPECT_EQ(j["released"], true);
    EXPECT_EQ(j["forwarded"], json::array({"SIGTERM"}));
    EXPECT_EQ(j["result"], "interrupted") << "a run ended by a forwarded SIGTERM did not complete on its own";
}

TEST_F(RunTest, ContendedExits75WithoutRunningCmd) {
    auto holder = client();
    auto held = holder.try_acquire(resource("busy"), AcquireOptions{.lease = 30s});
    ASSERT_TRUE(held && held->acquired());
    const std::vector<std::vector<std::string>> flag_sets{{"--lease", "5s", "-n"}, {"--lease", "5s", "--wait", "1s"}};
    for (const auto& flags : flag_sets) {
        auto r = run_process(run_args("busy", flags, R"(touch "$1/ran")"));
        EXPECT_EQ(r.exit_code, 75) << r.err;
        json j = summary(r.err);
        EXPECT_EQ(j["acquired"], false);
        EXPECT_EQ(j["result"], "contended");
        EXPECT_EQ(j["exit_code"], 75);
        EXPECT_GT(j["pttl_ms"].get<long>(), 0);
        if (std::ranges::find(flags, "--wait") != flags.end()) {
            EXPECT_GE(j["attempts"].get<int>(), 2) << "kept trying within --wait";
        }
    }
    EXPECT_FALSE(fs::exists(path("ran")));
    auto info = holder.inspect(resource("busy"));
    ASSERT_TRUE(info && info->holder);
    EXPECT_EQ(info->holder->owner, held->lease->owner.str());
}

TEST_F(RunTest, WaitAcquiresOnceTheHolderLets) {
    auto holder = client();
    auto held = holder.try_acquire(resource("later"), AcquireOptions{.lease = 2s});
    ASSERT_TRUE(held && held->acquired());
    auto r = run_process(run_args("later", {"--lease", "5s", "--wait", "20s"}, "exit 0"));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    json j = summary(r.err);
    EXPECT_EQ(j["acquired"], true);
    EXPECT_GE(j["attempts"].get<int>(), 2);
    EXPECT_GT(j["fence"].get<std::uint64_t>(), held->lease->fence.value());
}

TEST_F(RunTest, InterruptWhileWaitingGivesUpWithoutRunningCmd) {
    auto holder = client();
    auto held = holder.try_acquire(resource("wait"), AcquireOptions{.lease = 60s});
    ASSERT_TRUE(held && held->acquired());
    const long before = connected_clients();
    const pid_t run = start(run_args("wait", {"--lease", "5s", "--wait", "60s"}, R"(touch "$1/ran")"));
    // fencelock is connected, so it is in its waiting loop with signals blocked.
    ASSERT_TRUE(eventually([&] { return connected_clients() > before; }));
    const auto interrupted = steady::now();
    ASSERT_EQ(::kill(run, SIGINT), 0);
    EXPECT_EQ(wait_exit(run), 128 + SIGINT);
    EXPECT_LT(seconds_since(interrupted), 10.0) << "well before --wait ends";
    json j = summary(slurp(path("fencelock.err")));
    EXPECT_EQ(j["acquired"], false);
    EXPECT_EQ(j["result"], "interrupted");
    EXPECT_EQ(j["signal"], "SIGINT");
    EXPECT_FALSE(fs::exists(path("ran")));
}

TEST_F(RunTest, MaxHoldEndsTheLeaseAndStopsCmd) {
    const pid_t run = start(run_args("bounded", {"--lease", "2s", "--max-hold", "3s", "--grace", "400ms"},
                                     std::string(announce) + "exec sleep 60"));
    const pid_t cmd = wait_started();
    ASSERT_GT(cmd, 0);
    EXPECT_EQ(wait_exit(run), 76);
    EXPECT_TRUE(process_gone(cmd));
    json j = summary(slurp(path("fencelock.err")));
    EXPECT_EQ(j["loss_reason"], "max_hold_exceeded");
    EXPECT_GE(j["renewals"].get<int>(), 1);
}

// acquire's default max hold (1 h) used to stop wrapped jobs with exit 76 after an hour, without
// a word at start. run's default is the longest allowed: CMD sees it from inside its lease.
TEST_F(RunTest, DefaultMaxHoldIsTheLongestAllowed) {
    auto r = run_process(run_args("long", {"--lease", "5s"},
                                  std::string(FENCELOCK_CLI) + " --redis " + redis->url() +
                                      R"( inspect "$FENCELOCK_RESOURCE" > "$1/inspect")"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json held = json::parse(slurp(path("inspect")), nullptr, false);
    ASSERT_TRUE(held.contains("max_hold_left_ms")) << held;
    EXPECT_GT(held["max_hold_left_ms"].get<long long>(), 24LL * 3600 * 1000) << "far beyond acquire's hour";
    EXPECT_LE(held["max_hold_left_ms"].get<long long>(), 720LL * 3600 * 1000);
    r = run_process(cli({"run", "long", "--help"}));
    EXPECT_NE(r.out.find("default 720h"), std::string::npos) << r.out;
}

TEST_F(RunTest, ReportFileHoldsTheSummary) {
    auto r = run_process(run_args("rep", {"--lease", "5s", "--report", path("report.json")}, "exit 3"));
    EXPECT_EQ(r.exit_code, 3);
    json report = json::parse(slurp(path("report.json")), nullptr, false);
    EXPECT_EQ(report, summary(r.err));
    for (const char* key : {"acquired", "fence", "lease_lost", "renewals", "exit_code"})
        EXPECT_TRUE(report.contains(key)) << key;
    EXPECT_EQ(report["acquired"], true);
    EXPECT_EQ(report["exit_code"], 3);

    auto holder = client();
    ASSERT_TRUE(holder.try_acquire(resource("rep"), AcquireOptions{.lease = 30s}).value().acquired());
    r = run_process(run_args("rep", {"--lease", "5s", "-n", "--report", path("report.json")}, "exit 0"));
    EXPECT_EQ(r.exit_code, 75);
    report = json::parse(slurp(path("report.json")), nullptr, false);
    EXPECT_EQ(report, summary(r.err));
    EXPECT_EQ(report["acquired"], false);
    EXPECT_EQ(report["exit_code"], 75);
}

TEST_F(RunTest, BadInputExitsTwoAndChangesNothing) {
    ASSERT_EQ(run_process(run_args("existing", {"--lease", "30s"}, "exit 0")).exit_code, 0);
    const std::string before = redis->snapshot();
    const std::string ran = path("ran");
    const std::vector<std::string> touch{"sh", "-c", R"(touch "$1")", "sh", ran};
    auto with_cmd = [&](std::vector<std::string> args) {
        args.push_back("--");
        args.insert(args.end(), touch.begin(), touch.end());
        return args;
    };
    const std::vector<std::vector<std::string>> cases{
        {"run", "r", "--lease", "5s"},
        {"run", "r", "--lease", "5s", "--"},
        {"run", "r", "--lease", "5s", "--", ""},
        {"run", "--lease", "5s", "--", "sh", "-c", "exit 0"},  // RESOURCE missing before --
        with_cmd({"run", "", "--lease", "5s"}),
        with_cmd({"run", "}r", "--lease", "5s"}),
        with_cmd({"run", "r", "-n", "--wait", "1s"}),
        with_cmd({"run", "r", "-E", "300"}),
        with_cmd({"run", "r", "--lease", "5"}),
        with_cmd({"run", "r", "--lease", "0s"}),
        with_cmd({"run", "r", "--lease", "5ms"}),
        with_cmd({"run", "r", "--lease", "5s", "--wait", "soon"}),
        with_cmd({"run", "r", "--lease", "5s", "--grace", "0s"}),
        with_cmd({"run", "r", "--lease", "5s", "--grace", "later"}),
        // 5 s leaves 2.45 s for a grace that ends before the lease can (posix/stop_schedule.hpp).
        with_cmd({"run", "r", "--lease", "5s", "--grace", "3s"}),
        with_cmd({"run", "r", "--lease", "1s", "--grace", "1s"}),
        with_cmd({"run", "r", "--lease", "5s", "--max-hold", "1s"}),
        with_cmd({"run", "r", "--lease", "5s", "--report", ""}),
        with_cmd({"run", "r", "--lease", "5s", "--report", path("no-such-dir/report.json")}),
        with_cmd({"run", "r", "--lease", "5s", "--frobnicate"}),
        with_cmd({"--timeout", "0ms", "run", "r", "--lease", "5s"}),
    };
    for (const auto& args : cases) {
        const long connections = connections_received();
        auto result = run_process(cli(args));
        std::string shown;
        for (const auto& a : args) shown += a + " ";
        EXPECT_EQ(result.exit_code, 2) << shown << "\n" << result.out << result.err;
        json j = summary(result.err);
        EXPECT_EQ(j["error"], "invalid_input") << shown;
        EXPECT_FALSE(result.err.empty()) << "a diagnostic on stderr: " << shown;
        // Only the INFO call of connections_received() itself connected: fencelock sent nothing.
        EXPECT_EQ(connections_received(), connections + 1) << shown;
    }
    EXPECT_FALSE(fs::exists(ran)) << "CMD never ran";
    EXPECT_EQ(redis->snapshot(), before);
}

TEST_F(RunTest, BadInputNamesTheOffendingFlag) {
    auto r = run_process(cli({"run", "r", "--lease", "5s", "--grace", "soon", "--", "true"}));
    EXPECT_EQ(summary(r.err)["field"], "--grace");
    EXPECT_NE(r.err.find("--grace"), std::string::npos);
    r = run_process(cli({"run", "r", "--lease", "5s", "--grace", "10s", "--", "true"}));
    EXPECT_EQ(summary(r.err)["field"], "--grace");
    EXPECT_NE(summary(r.err)["message"].get<std::string>().find("2451ms"), std::string::npos)
        << "the message gives the bound: " << r.err;
    r = run_process(cli({"run", "r", "--lease", "5s", "--"}));
    EXPECT_EQ(summary(r.err)["field"], "CMD");
}

TEST_F(RunTest, UnreachableRedisExitsFourWithoutRunningCmd) {
    auto r =
        run_process({FENCELOCK_CLI, "--redis", "redis://127.0.0.1:" + std::to_string(free_port()), "--timeout", "200ms",
                     "run", "r", "--json", "--lease", "5s", "--", "sh", "-c", R"(touch "$1")", "sh", path("ran")});
    EXPECT_EQ(r.exit_code, 4);
    EXPECT_EQ(summary(r.err)["error"], "redis");
    EXPECT_FALSE(fs::exists(path("ran")));
}

TEST_F(RunTest, CmdNotFoundExits127AndReleases) {
    auto r = run_process(cli({"run", "missing", "--lease", "5s", "--", path("no-such-program")}));
    EXPECT_EQ(r.exit_code, 127);
    json j = summary(r.err);
    EXPECT_EQ(j["error"], "spawn");
    EXPECT_EQ(j["released"], true);
    EXPECT_FALSE(lock_exists("missing"));
    EXPECT_NE(r.err.find("no-such-program"), std::string::npos);
}

TEST_F(RunTest, CmdStartsWithAnEmptySignalMaskAndDefaultDispositions) {
    // fencelock blocks SIGINT, SIGTERM, SIGUSR1, SIGCHLD... and ignores SIGPIPE, SIGXCPU and
    // SIGXFSZ; none of it may reach CMD.
    auto r = run_process(
        run_args("mask", {"--lease", "5s"}, R"(exec grep -E '^Sig(Blk|Ign):' /proc/self/status > "$1/sig")"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto sig = lines(slurp(path("sig")));
    ASSERT_EQ(sig.size(), 2u);
    auto mask = [](const std::string& line) { return std::stoull(line.substr(line.find(':') + 1), nullptr, 16); };
    EXPECT_EQ(mask(sig[0]), 0u) << sig[0];
    auto bit = [](int signo) { return 1ull << (signo - 1); };
    for (int signo : {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGCHLD, SIGPIPE, SIGUSR1, SIGXCPU, SIGXFSZ})
        EXPECT_EQ(mask(sig[1]) & bit(signo), 0u) << "signal " << signo << " ignored: " << sig[1];
}

TEST_F(RunTest, CmdDoesNotInheritFencelocksRedisConnections) {
    auto r = run_process(run_args("fds", {"--lease", "5s"}, R"(ls -l /proc/$$/fd > "$1/fds")"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string fds = slurp(path("fds"));
    EXPECT_EQ(fds.find("socket:"), std::string::npos) << fds;
    EXPECT_EQ(fds.find("anon_inode:"), std::string::npos) << "signalfd/eventfd stay in fencelock\n" << fds;
}

}  // namespace
}  // namespace fencelock::test_support
