// --replicas N [--replica-timeout D] on acquire, run and worker: acknowledged grants succeed,
// unacknowledged ones exit 4 with not_replicated and leave no lock, bad values exit 2 and
// send nothing to Redis.
#include <nlohmann/json.hpp>

#include "fencelock/error.hpp"
#include "integration/replicated_fixture.hpp"
#include "local_servers/child_process.hpp"

namespace fencelock::test_support {
namespace {

using local::ProcessResult;
using local::run_process;
using nlohmann::json;

class ReplicasCliTest : public ReplicatedRedisTest {
protected:
    ProcessResult fencelock(std::vector<std::string> args) {
        args.insert(args.begin(), {FENCELOCK_CLI, "--redis", master->url()});
        return run_process(args);
    }
    long connections_received() const {
        const std::string info = master->cli({"INFO", "stats"});
        const std::string marker = "total_connections_received:";
        return std::stol(info.substr(info.find(marker) + marker.size()));
    }
};

// A redis:// URL at a replica says the server is read-only and what to use instead (it used to
// read like a Redis failure of no particular kind).
TEST_F(ReplicasCliTest, AUrlAtAReplicaSaysItIsReadOnly) {
    const std::string before = master->snapshot();
    auto r = run_process({FENCELOCK_CLI, "--redis", replica->url(), "acquire", "c0", "--lease", "30s"});
    EXPECT_EQ(r.exit_code, 4) << r.out << r.err;
    const json e = json::parse(r.out, nullptr, false);
    EXPECT_EQ(e.value("code", ""), "read_only_replica") << r.out;
    const std::string detail = e.value("detail", "");
    EXPECT_NE(detail.find("read-only replica"), std::string::npos) << detail;
    EXPECT_NE(detail.find("redis-sentinel://"), std::string::npos) << detail;
    EXPECT_EQ(master->snapshot(), before);
}

TEST_F(ReplicasCliTest, AcquireWithAReplicaInSyncSucceeds) {
    // --timeout 5s --replica-timeout 2s: replicas in sync answer in milliseconds, but a busy
    // test machine can take longer than the 200 ms default.
    auto r =
        fencelock({"--timeout", "5s", "acquire", "c1", "--lease", "30s", "--replicas", "1", "--replica-timeout", "2s"});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    const json j = json::parse(r.out);
    EXPECT_EQ(j["acquired"], true);
    EXPECT_EQ(replica->cli({"HGET", "lock:{c1}", "owner"}), j["owner"]);
    const long waits = stat_calls("wait");  // the first also followed a fresh server's NOSCRIPT
    ASSERT_EQ(
        fencelock({"--timeout", "5s", "acquire", "c1b", "--lease", "30s", "--replicas", "1", "--replica-timeout", "2s"})
            .exit_code,
        0);
    EXPECT_EQ(stat_calls("wait"), waits + 1);
}

TEST_F(ReplicasCliTest, UnacknowledgedAcquireAndRunExitFourAndLeaveNoLock) {
    replica->pause();
    auto acquired = fencelock({"acquire", "c2", "--lease", "30s", "--replicas", "1"});
    EXPECT_EQ(acquired.exit_code, 4) << acquired.out << acquired.err;
    const json j = json::parse(acquired.out);
    EXPECT_EQ(j["code"], "not_replicated");
    EXPECT_EQ(j["kind"], "retryable");
    EXPECT_FALSE(on_master("lock:{c2}"));

    auto ran = fencelock({"run", "c3", "--json", "--lease", "30s", "--replicas", "1", "--", "true"});
    EXPECT_EQ(ran.exit_code, 4) << ran.out << ran.err;
    EXPECT_EQ(ran.out, "") << "run's JSON goes to stderr";
    EXPECT_NE(ran.err.find("\"kind\":\"retryable\""), std::string::npos) << ran.err;
    EXPECT_FALSE(on_master("lock:{c3}"));
}

TEST_F(ReplicasCliTest, BadReplicaFlagsExitTwoAndSendNothing) {
    ASSERT_EQ(fencelock({"acquire", "existing", "--lease", "30s"}).exit_code, 0);
    const std::string before = master->snapshot();
    std::vector<std::vector<std::string>> cases;
    const std::vector<std::vector<std::string>> bad{
        {"--replicas", "-1"},
        {"--replicas", "x"},
        {"--replicas", "1.5"},
        {"--replicas", ""},
        {"--replicas", "101"},
        {"--replicas", "99999999999999999999"},
        {"--replicas", "1", "--replica-timeout", "0ms"},
        {"--replicas", "1", "--replica-timeout", "-5ms"},
        {"--replicas", "1", "--replica-timeout", "soon"},
        {"--replicas", "1", "--replica-timeout", "600ms"},  // more than half of --timeout 1s
        {"--replica-timeout", "100ms"},                     // without --replicas
    };
    for (const auto& flags : bad) {
        std::vector<std::string> acquire{"acquire", "r", "--lease", "10s"};
        std::vector<std::string> run{"run", "r", "--json", "--lease", "10s"};
        std::vector<std::string> worker{"worker", "--queue", "q", "--db", "sqlite:///nonexistent/dir/x.db"};
        for (auto* c : {&acquire, &run, &worker}) c->insert(c->end(), flags.begin(), flags.end());
        run.insert(run.end(), {"--", "true"});
        worker.insert(worker.end(), {"--", "true"});
        cases.insert(cases.end(), {acquire, run, worker});
    }
    cases.push_back({"--timeout", "300ms", "acquire", "r", "--lease", "10s", "--replicas", "1"});  // default 200ms
    for (const auto& args : cases) {
        const long connections = connections_received();
        auto result = fencelock(args);
        std::string shown;
        for (const auto& a : args) shown += a + " ";
        EXPECT_EQ(result.exit_code, 2) << shown << "\n" << result.out << result.err;
        // run keeps stdout for its command: its JSON is stderr's last line.
        const std::string& json_out = args.front() == "run" ? result.err : result.out;
        EXPECT_NE(json_out.find("invalid_input"), std::string::npos) << shown << json_out;
        // The flag is named (the worker's --db is never opened, so it cannot be the complaint).
        EXPECT_NE(result.err.find("replica"), std::string::npos) << shown << result.err;
        EXPECT_EQ(connections_received(), connections + 1) << shown;  // only our INFO connected
    }
    EXPECT_EQ(master->snapshot(), before);
}

}  // namespace
}  // namespace fencelock::test_support
