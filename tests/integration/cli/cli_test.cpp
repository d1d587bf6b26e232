// The fencelock CLI as an operator uses it: one JSON object per command, documented exit codes,
// and bad input that changes nothing in Redis.
#include <nlohmann/json.hpp>

#include "fencelock/version.hpp"
#include "integration/lock_fixture.hpp"
#include "local_servers/child_process.hpp"

namespace fencelock::test_support {
namespace {

using local::free_port;
using local::ProcessResult;
using local::RedisServer;
using local::run_process;
using nlohmann::json;

class CliTest : public LockTest {
protected:
    ProcessResult fencelock(std::vector<std::string> args) {
        args.insert(args.begin(), {FENCELOCK_CLI, "--redis", redis->url()});
        return run_process(args);
    }
    static json parse_one_object(const ProcessResult& r) {
        // Exactly one line holding one JSON object.
        EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
        json j = json::parse(r.out, nullptr, false);
        EXPECT_TRUE(j.is_object()) << r.out;
        return j;
    }
    long connections_received() {
        const std::string info = redis->cli({"INFO", "stats"});
        const std::string marker = "total_connections_received:";
        return std::stol(info.substr(info.find(marker) + marker.size()));
    }
};

// Help for people: usage lines name `fencelock`, not the path it was started by, and --redis
// names every URL scheme it takes.
TEST(CliHelp, UsageNamesFencelockAndEveryScheme) {
    const auto top = run_process({FENCELOCK_CLI, "--help"});
    EXPECT_EQ(top.exit_code, 0);
    EXPECT_NE(top.out.find("Usage: fencelock "), std::string::npos) << top.out;
    for (const char* scheme : {"redis://", "rediss://", "redis-sentinel://", "rediss-sentinel://", "redis-cluster://",
                               "rediss-cluster://", "unix://"})
        EXPECT_NE(top.out.find(scheme), std::string::npos) << scheme;
    const auto sub = run_process({FENCELOCK_CLI, "run", "--help"});
    EXPECT_NE(sub.out.find("Usage: fencelock run "), std::string::npos) << sub.out;
    EXPECT_EQ((top.out + sub.out).find(FENCELOCK_CLI), std::string::npos) << "the binary's path";
}

// A release that deletes nothing says why: nobody holds the lock, or somebody else does.
TEST_F(CliTest, ReleaseTellsNotHeldFromNotOwner) {
    auto nobody = fencelock({"release", "order:9", "--owner", "0123456789abcdef"});
    EXPECT_EQ(nobody.exit_code, 3);
    EXPECT_EQ(parse_one_object(nobody)["result"], "not_held");
    ASSERT_EQ(fencelock({"acquire", "order:9", "--lease", "30s"}).exit_code, 0);
    const std::string before = redis->snapshot();
    auto other = fencelock({"release", "order:9", "--owner", "0123456789abcdef"});
    EXPECT_EQ(other.exit_code, 3);
    EXPECT_EQ(parse_one_object(other)["result"], "not_owner");
    EXPECT_EQ(redis->snapshot(), before) << "another owner's lock is untouched";
}

// --label names the holder beside its host and pid; a label too long or with control
// characters is refused with its numbers, before anything reaches Redis.
TEST_F(CliTest, LabelIsStoredWithTheLeaseAndChecked) {
    ASSERT_EQ(fencelock({"--label", "nightly backup", "acquire", "order:7", "--lease", "30s"}).exit_code, 0);
    const auto listed = fencelock({"list"});
    ASSERT_EQ(listed.exit_code, 0) << listed.err;
    EXPECT_EQ(parse_one_object(listed)["holder"]["label"], "nightly backup");
    const std::string before = redis->snapshot();
    const auto too_long = fencelock({"--label", std::string(201, 'x'), "acquire", "order:8", "--lease", "30s"});
    EXPECT_EQ(too_long.exit_code, 2);
    EXPECT_NE(too_long.err.find("201 bytes long; at most 200"), std::string::npos) << too_long.err;
    const auto control = fencelock({"--label", "a\nb", "acquire", "order:8", "--lease", "30s"});
    EXPECT_EQ(control.exit_code, 2);
    EXPECT_EQ(parse_one_object(control)["field"], "--label");
    EXPECT_EQ(redis->snapshot(), before);
}

TEST_F(CliTest, AcquireRenewReleaseInspectRoundTrip) {
    auto acquired = fencelock({"acquire", "order:1", "--lease", "30s"});
    ASSERT_EQ(acquired.exit_code, 0) << acquired.err;
    json a = parse_one_object(acquired);
    EXPECT_EQ(a["acquired"], true);
    EXPECT_EQ(a["resource"], "order:1");
    const std::uint64_t fence = a["fence"];  // a JSON number, exact below 2^53
    EXPECT_GT(fence, 0u);
    EXPECT_LE(fence, max_fence);
    EXPECT_EQ(a["lease_ms"], 30000);
    const std::string owner = a["owner"];
    EXPECT_EQ(owner.size(), 32u);

    auto contended = fencelock({"acquire", "order:1", "--lease", "30s"});
    EXPECT_EQ(contended.exit_code, 3);
    json c = parse_one_object(contended);
    EXPECT_EQ(c["acquired"], false);
    EXPECT_EQ(c["result"], "contended");
    EXPECT_GT(c["pttl_ms"].get<long>(), 0);

    auto renewed = fencelock({"renew", "order:1", "--owner", owner, "--lease", "60s"});
    ASSERT_EQ(renewed.exit_code, 0) << renewed.err;
    EXPECT_EQ(parse_one_object(renewed)["fence"], fence);

    auto inspected = fencelock({"inspect", "order:1"});
    ASSERT_EQ(inspected.exit_code, 0);
    json i = parse_one_object(inspected);
    EXPECT_EQ(i["held"], true);
    EXPECT_EQ(i["owner"], owner);
    EXPECT_EQ(i["last_fence"], fence);
    EXPECT_EQ(i["renewals"], 1);
    EXPECT_TRUE(i["holder"].contains("host"));
    for (const char* key : {"pttl_ms", "held_for_ms", "since_renew_ms"}) EXPECT_TRUE(i.contains(key)) << key;

    auto wrong = fencelock({"release", "order:1", "--owner", "someone-else"});
    EXPECT_EQ(wrong.exit_code, 3);
    EXPECT_EQ(parse_one_object(wrong)["result"], "not_owner");
    auto wrong_renew = fencelock({"renew", "order:1", "--owner", "someone-else", "--lease", "1s"});
    EXPECT_EQ(wrong_renew.exit_code, 3);
    EXPECT_EQ(parse_one_object(wrong_renew)["result"], "not_owner");

    auto released = fencelock({"release", "order:1", "--owner", owner});
    ASSERT_EQ(released.exit_code, 0);
    EXPECT_EQ(parse_one_object(released)["released"], true);
    auto after = parse_one_object(fencelock({"inspect", "order:1"}));
    EXPECT_EQ(after["held"], false);
    EXPECT_EQ(after["last_fence"], fence);
}

TEST_F(CliTest, VersionIsTheLibrarysWithItsCommit) {
    const auto r = fencelock({"--version"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "fencelock " + std::string(version()) + " (" + std::string(revision()) + ")\n");
}

TEST_F(CliTest, SameOwnerRetryReturnsTheSameFence) {
    json a = parse_one_object(fencelock({"acquire", "r", "--lease", "30s"}));
    auto again = fencelock({"acquire", "r", "--lease", "30s", "--owner", a["owner"]});
    ASSERT_EQ(again.exit_code, 0);
    json b = parse_one_object(again);
    EXPECT_EQ(b["fence"], a["fence"]);
    EXPECT_EQ(b["reacquired"], true);
}

TEST_F(CliTest, MaxHoldExceededIsANegativeOutcome) {
    json a = parse_one_object(fencelock({"acquire", "r", "--lease", "50ms", "--max-hold", "50ms"}));
    // Renew until Redis refuses (the max hold is 50ms after acquisition).
    ProcessResult last;
    ASSERT_TRUE(eventually([&] {
        last = fencelock({"renew", "r", "--owner", a["owner"], "--lease", "50ms"});
        return last.exit_code != 0;
    }));
    json j = parse_one_object(last);
    // The lease may also have expired in between; both are refusals, never a renewal.
    EXPECT_EQ(last.exit_code, 3);
    EXPECT_TRUE(j["result"] == "max_hold_exceeded" || j["result"] == "not_owner") << j;
}

TEST_F(CliTest, BadInputExitsTwoAndChangesNothing) {
    ASSERT_EQ(fencelock({"acquire", "existing", "--lease", "30s"}).exit_code, 0);
    const std::string before = redis->snapshot();
    const std::vector<std::vector<std::string>> cases{
        {"acquire", "", "--lease", "10s"},
        {"acquire", std::string(1025, 'x'), "--lease", "10s"},
        {"acquire", "}leading-brace", "--lease", "10s"},
        {"acquire", "r", "--lease", "10"},
        {"acquire", "r", "--lease", "0s"},
        {"acquire", "r", "--lease", "-5s"},
        {"acquire", "r", "--lease", "99999999999999999999s"},
        {"acquire", "r", "--lease", "10parsecs"},
        {"acquire", "r", "--lease", "5ms"},
        {"acquire", "r", "--lease", "10s", "--max-hold", "1s"},
        {"acquire", "r", "--lease", "10s", "--wait", "soon"},
        {"acquire", "r", "--lease", "10s", "--owner", ""},
        {"acquire", "r", "--lease", "10s", "--owner", "has space"},
        {"acquire", "r", "--lease", "10s", "--frobnicate"},
        {"acquire", "r"},
        // Past the documented bounds (limits in fencelock/options.hpp): a 1e17 ms lease once
        // left a lock without TTL, and 10000000h wrapped the clock.
        {"acquire", "r", "--lease", "99999999h"},
        {"acquire", "r", "--lease", "100000000000000000ms"},
        {"acquire", "r", "--lease", "25h"},
        {"acquire", "r", "--lease", "10s", "--max-hold", "721h"},
        {"acquire", "r", "--lease", "10s", "--max-hold", "100000000000000000ms"},
        {"acquire", "r", "--lease", "10s", "--wait", "25h"},
        {"acquire", "r", "--lease", "10s", "--wait", "10000000h"},
        {"--timeout", "10000000h", "inspect", "r"},
        {"--timeout", "11m", "inspect", "r"},
        {"renew", "existing", "--owner", "x", "--lease", "25h"},
        {"renew", "existing", "--owner", "", "--lease", "10s"},
        {"renew", "existing", "--owner", "x", "--lease", "forever"},
        {"release", "existing", "--owner", ""},
        {"release", "existing"},
        {"inspect", ""},
        {"--timeout", "0ms", "inspect", "r"},
        {"--redis", "http://127.0.0.1:6379", "inspect", "r"},
        {"--redis", "redis://127.0.0.1:99999", "inspect", "r"},
        {"--redis", "redis://:@127.0.0.1", "inspect", "r"},
        {"bench", "--scenario", "lukewarm"},
        {"bench", "--clients", "0"},
        {"bench", "--scenario", "hot", "--connections", "0"},
        {"bench", "--connections", "65"},
        {"bench", "--scenario", "keeper", "--leases", "0"},
        {"bench", "--scenario", "hot", "--clients", "2", "--processes", "3"},
        {"bench", "--scenario", "hot", "--clients", "2", "--processes", "0"},
        {"bench", "--scenario", "distinct", "--clients", "4", "--processes", "2"},
        {"no-such-command"},
#ifdef FENCELOCK_WITH_STORE
        // Refused before the run: it used to run for half a minute, say "timeline written" and write nothing.
        {"demo", "--timeline", "/nonexistent/x.html"},
        {"demo", "--failover", "--timeline", "/nonexistent/x.html"},
#endif
    };
    for (const auto& args : cases) {
        const long connections = connections_received();
        auto result = fencelock(args);
        std::string shown;
        for (const auto& a : args) shown += a.substr(0, 40) + " ";
        EXPECT_EQ(result.exit_code, 2) << shown << "\n" << result.out << result.err;
        json j = parse_one_object(result);
        EXPECT_EQ(j["error"], "invalid_input") << shown;
        EXPECT_FALSE(result.err.empty()) << "a diagnostic on stderr: " << shown;
        // Only the INFO call of connections_received() itself connected: the CLI sent nothing.
        EXPECT_EQ(connections_received(), connections + 1) << shown;
    }
    EXPECT_EQ(redis->snapshot(), before);
}

// bench used to leave 10,000 fence:{fencelock-bench-keeper:N} keys that never expire. Its keys
// (every resource named fencelock-bench*) are removed before and after each run; other keys stay.
TEST_F(CliTest, BenchLeavesTheDatabaseAsItFoundIt) {
    redis->cli({"SET", "fence:{fencelock-bench-keeper:7}", "12"});  // left by an interrupted run
    redis->cli({"SET", "fence:{mine}", "3"});
    const std::string before = "fence:{mine}\n";
    auto keeper =
        fencelock({"bench", "--scenario", "keeper", "--leases", "20", "--lease", "30s", "--duration", "200ms"});
    ASSERT_EQ(keeper.exit_code, 0) << keeper.err;
    // A window shorter than a renewal interval used to report zeros without a word.
    const json k = parse_one_object(keeper);
    EXPECT_EQ(k["renewals"], 0);
    EXPECT_NE(k.value("warning", "").find("--duration"), std::string::npos) << k;
    EXPECT_NE(keeper.err.find("no renewal within the measurement window"), std::string::npos) << keeper.err;
    EXPECT_EQ(redis->cli({"KEYS", "*"}) + "\n", before);
    for (const char* scenario : {"distinct", "hot"}) {
        auto r = fencelock({"bench", "--scenario", scenario, "--clients", "2", "--duration", "200ms"});
        ASSERT_EQ(r.exit_code, 0) << scenario << ": " << r.err;
        EXPECT_EQ(redis->cli({"KEYS", "*"}) + "\n", before) << scenario;
    }
    // Contenders in processes of their own: one summary over all of them, keys removed once.
    auto spread =
        fencelock({"bench", "--scenario", "hot", "--clients", "5", "--processes", "2", "--duration", "300ms"});
    ASSERT_EQ(spread.exit_code, 0) << spread.err;
    const json s = parse_one_object(spread);
    EXPECT_EQ(s["processes"], 2);
    EXPECT_EQ(s["clients"], 5);
    EXPECT_GT(s["acquisitions"].get<int>(), 0) << s;
    EXPECT_EQ(s["errors"], 0) << s;
    EXPECT_EQ(redis->cli({"KEYS", "*"}) + "\n", before);
}

TEST_F(CliTest, AnEvictingRedisIsRefusedWithExitFourNamingThePolicy) {
    redis->cli({"CONFIG", "SET", "maxmemory-policy", "allkeys-lru"});
    const std::string before = redis->snapshot();
    for (const std::vector<std::string>& args : {std::vector<std::string>{"acquire", "r", "--lease", "10s"},
                                                 {"inspect", "r"},
                                                 {"run", "r", "--lease", "10s", "--", "true"}}) {
        auto refused = fencelock(args);
        EXPECT_EQ(refused.exit_code, 4) << args[0] << ": " << refused.out << refused.err;
        EXPECT_NE(refused.err.find("maxmemory-policy is allkeys-lru"), std::string::npos) << refused.err;
        EXPECT_EQ(redis->snapshot(), before) << args[0];
    }
    auto allowed = fencelock({"--allow-eviction", "acquire", "r", "--lease", "10s"});
    EXPECT_EQ(allowed.exit_code, 0) << allowed.out << allowed.err;
}

TEST_F(CliTest, BadInputNamesTheOffendingFlag) {
    auto result = fencelock({"acquire", "r", "--lease", "10s", "--max-hold", "1s"});
    EXPECT_EQ(parse_one_object(result)["field"], "--max-hold");
    result = fencelock({"acquire", "r", "--lease", "10"});
    EXPECT_EQ(parse_one_object(result)["field"], "--lease");
    EXPECT_NE(result.err.find("--lease"), std::string::npos);
}

TEST_F(CliTest, UnreachableRedisExitsFourWithoutLeakingThePassword) {
    auto result =
        run_process({FENCELOCK_CLI, "--redis", "redis://bob:hunter2-secret@127.0.0.1:" + std::to_string(free_port()),
                     "--timeout", "200ms", "acquire", "r", "--lease", "10s"});
    EXPECT_EQ(result.exit_code, 4);
    EXPECT_EQ(parse_one_object(result)["error"], "redis");
    EXPECT_EQ((result.out + result.err).find("hunter2"), std::string::npos);
}

TEST_F(CliTest, WrongPasswordFailsClosedWithoutLeakingIt) {
    RedisServer secured({"--requirepass", "right-pw"});
    auto result =
        run_process({FENCELOCK_CLI, "--redis", "redis://:wrong-pw-123@127.0.0.1:" + std::to_string(secured.port()),
                     "acquire", "r", "--lease", "10s"});
    EXPECT_EQ(result.exit_code, 4);
    EXPECT_EQ((result.out + result.err).find("wrong-pw-123"), std::string::npos);
    EXPECT_EQ(secured.cli({"-a", "right-pw", "DBSIZE"}), "0");
}

TEST_F(CliTest, ForceReleaseRefusesAnActiveLockThenAuditsAForcedOne) {
    json a = parse_one_object(fencelock({"acquire", "stuck", "--lease", "30s"}));
    const std::string before = redis->snapshot();
    auto refused = fencelock({"force-release", "stuck", "--reason", "looks stuck"});
    EXPECT_EQ(refused.exit_code, 3);
    const json r = parse_one_object(refused);
    EXPECT_EQ(r["result"], "active");
    EXPECT_EQ(r["renewed"], false);
    EXPECT_NE(refused.err.find("--even-if-active"), std::string::npos);
    // Never renewed: the message says when it was acquired, not "renewed N ms ago".
    EXPECT_NE(refused.err.find("acquired"), std::string::npos) << refused.err;
    EXPECT_NE(refused.err.find("never renewed"), std::string::npos) << refused.err;
    EXPECT_EQ(redis->snapshot(), before);
    ASSERT_EQ(fencelock({"renew", "stuck", "--owner", a["owner"], "--lease", "30s"}).exit_code, 0);
    refused = fencelock({"force-release", "stuck", "--reason", "looks stuck"});
    EXPECT_EQ(parse_one_object(refused)["renewed"], true);
    EXPECT_NE(refused.err.find("renewed "), std::string::npos) << refused.err;

    auto forced = fencelock({"force-release", "stuck", "--reason", "host gone", "--even-if-active", "--operator",
                             "carol@ops", "--owner", a["owner"]});
    ASSERT_EQ(forced.exit_code, 0) << forced.err;
    json f = parse_one_object(forced);
    EXPECT_EQ(f["released"], true);
    EXPECT_EQ(f["fence"], a["fence"]);
    EXPECT_NE(forced.err.find("\"event\":\"force_release\""), std::string::npos) << "the log records it too";

    auto audit = fencelock({"audit", "--resource", "stuck"});
    ASSERT_EQ(audit.exit_code, 0);
    json entry = parse_one_object(audit);
    EXPECT_EQ(entry["reason"], "host gone");
    EXPECT_EQ(entry["operator"], "carol@ops");
    EXPECT_EQ(entry["owner"], a["owner"]);
    EXPECT_EQ(entry["forced_active"], true);

    auto listed = fencelock({"list"});
    EXPECT_EQ(listed.exit_code, 0);
    EXPECT_TRUE(listed.out.empty()) << "no lock is held any more";
}

TEST_F(CliTest, ForceReleaseWithoutAReasonIsInvalidInput) {
    ASSERT_EQ(fencelock({"acquire", "stuck", "--lease", "30s"}).exit_code, 0);
    const std::string before = redis->snapshot();
    for (const auto& args : std::vector<std::vector<std::string>>{{"force-release", "stuck"},
                                                                  {"force-release", "stuck", "--reason", ""},
                                                                  {"force-release", "", "--reason", "x"},
                                                                  {"list", "--pattern", ""}}) {
        auto r = fencelock(args);
        EXPECT_EQ(r.exit_code, 2) << args[0] << " " << args[1];
    }
    EXPECT_EQ(redis->snapshot(), before);
}

TEST_F(CliTest, RedisUrlComesFromTheEnvironment) {
    auto result =
        run_process({FENCELOCK_CLI, "acquire", "env-r", "--lease", "10s"}, {"FENCELOCK_REDIS_URL=" + redis->url()});
    EXPECT_EQ(result.exit_code, 0) << result.err;
    EXPECT_EQ(redis->cli({"EXISTS", "lock:{env-r}"}), "1");
}

}  // namespace
}  // namespace fencelock::test_support
