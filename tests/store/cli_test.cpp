// `fencelock store ...` end to end on both backends: JSON results, exit codes, and that bad
// input or an unreachable database changes nothing.
#include <nlohmann/json.hpp>

#include "local_servers/child_process.hpp"
#include "local_servers/redis_server.hpp"
#include "store_fixture.hpp"

namespace fencelock::test_support {
namespace {

using local::free_port;
using local::ProcessResult;
using local::RedisServer;
using local::run_process;
using nlohmann::json;

struct Cli {
    int code;
    json out;
    std::string err;
};

Cli run_cli(std::vector<std::string> args) {
    args.insert(args.begin(), FENCELOCK_CLI);
    ProcessResult r = run_process(args, {"FENCELOCK_DB_URL="});
    json out = json::parse(r.out, nullptr, false);
    return {r.exit_code, out, r.err};
}

class CliTest : public StoreTest {
protected:
    Cli store_cmd(const std::string& sub, std::vector<std::string> args) {
        args.insert(args.begin(), {"store", sub, "--db", db->url()});
        return run_cli(args);
    }
};

TEST_P(CliTest, CommandsPrintOneJsonObjectWithDocumentedExitCodes) {
    auto init = store_cmd("init", {});
    EXPECT_EQ(init.code, 0) << init.err;
    EXPECT_EQ(init.out["schema_version"], 1);

    auto c = store_cmd("create", {"--resource", "r", "--value", "v0"});
    EXPECT_EQ(c.code, 0) << c.err;
    EXPECT_EQ(c.out["result"], "created");
    EXPECT_EQ(store_cmd("create", {"--resource", "r"}).code, 3);

    auto w = store_cmd("write", {"--resource", "r", "--fence", "5", "--value", "v5"});
    EXPECT_EQ(w.code, 0) << w.err;
    EXPECT_EQ(w.out, json::parse(R"({"result":"applied","resource":"r","last_fence":5})"));
    auto stale = store_cmd("write", {"--resource", "r", "--fence", "4", "--value", "old"});
    EXPECT_EQ(stale.code, 3);
    EXPECT_EQ(stale.out["result"], "stale");
    EXPECT_EQ(stale.out["last_fence"], 5);
    auto nf = store_cmd("write", {"--resource", "missing", "--fence", "4", "--value", "x"});
    EXPECT_EQ(nf.code, 3);
    EXPECT_EQ(nf.out["result"], "not_found");

    auto k1 = store_cmd("write", {"--resource", "r", "--fence", "6", "--value", "v6", "--idempotency-key", "job"});
    EXPECT_EQ(k1.code, 0);
    auto k2 = store_cmd("write", {"--resource", "r", "--fence", "7", "--value", "v7", "--idempotency-key", "job"});
    EXPECT_EQ(k2.code, 0) << "duplicate exits 0";
    EXPECT_EQ(k2.out["result"], "duplicate");
    EXPECT_EQ(k2.out["first"]["value"], "v6");
    EXPECT_EQ(k2.out["last_fence"], 6);

    auto claim = store_cmd("claim", {"--resource", "r", "--fence", "9", "--owner", "me"});
    EXPECT_EQ(claim.code, 0) << claim.err;
    EXPECT_EQ(claim.out, json::parse(R"({"result":"claimed","resource":"r","value":"v6","last_fence":9})"));
    EXPECT_EQ(store_cmd("claim", {"--resource", "r", "--fence", "8", "--owner", "me"}).code, 3);
    EXPECT_EQ(store_cmd("claim", {"--resource", "nope", "--fence", "8", "--owner", "me"}).out["result"], "not_found");
    EXPECT_EQ(store_cmd("write", {"--resource", "r", "--fence", "9", "--value", "x"}).code, 3) << "strict";
    EXPECT_EQ(store_cmd("write", {"--resource", "r", "--fence", "9", "--value", "v9", "--owner", "me"}).code, 0);

    auto read = store_cmd("read", {"--resource", "r"});
    EXPECT_EQ(read.code, 0);
    EXPECT_EQ(read.out,
              json::parse(R"({"result":"found","resource":"r","value":"v9","last_fence":9,"last_owner":"me"})"));
    EXPECT_EQ(store_cmd("read", {"--resource", "nope"}).code, 3);
}

TEST_P(CliTest, BadInputExitsTwoAndChangesNothing) {
    create("r", "v0");
    ASSERT_EQ(store->write(res("r"), FencingToken(5), "v5")->status, WriteStatus::applied);
    const std::string before = db->snapshot();
    const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
        {{"write", "--resource", "r", "--fence", "0", "--value", "x"}, "--fence"},
        {{"write", "--resource", "r", "--fence", "-3", "--value", "x"}, "--fence"},
        {{"write", "--resource", "r", "--fence=-3", "--value", "x"}, "--fence"},
        {{"write", "--resource", "r", "--fence", "7x", "--value", "x"}, "--fence"},
        {{"write", "--resource", "r", "--fence", "99999999999999999999", "--value", "x"}, "--fence"},
        {{"write", "--resource", "r", "--fence", "9007199254740992", "--value", "x"}, "--fence"},  // 2^53
        {{"claim", "--resource", "r", "--fence", "9223372036854775807", "--owner", "me"}, "--fence"},
        {{"write", "--resource", "", "--fence", "7", "--value", "x"}, "--resource"},
        {{"write", "--resource", "r", "--fence", "7", "--value", "x", "--owner", "has space"}, "--owner"},
        {{"write", "--resource", "r", "--fence", "7", "--value", "x", "--idempotency-key", ""}, "--idempotency-key"},
        {{"claim", "--resource", "r", "--fence", "0", "--owner", "me"}, "--fence"},
        {{"claim", "--resource", "", "--fence", "7", "--owner", "me"}, "--resource"},
        {{"create", "--resource", ""}, "--resource"},
        {{"read", "--resource", ""}, "--resource"},
        // Not store text (valid UTF-8 without NUL): refused before the database is opened.
        {{"write", "--resource", "r\xff", "--fence", "7", "--value", "x"}, "--resource"},
        {{"write", "--resource", "r", "--fence", "7", "--value", "\xc3\x28"}, "--value"},
        {{"write", "--resource", "r", "--fence", "7", "--value", "x", "--idempotency-key", "k\xed\xa0\x80"},
         "--idempotency-key"},
        {{"claim", "--resource", "r\xc0\x80", "--fence", "7", "--owner", "me"}, "--resource"},
        {{"create", "--resource", "n", "--value", "\xff"}, "--value"},
        {{"create", "--resource", "n\xff"}, "--resource"},
        {{"read", "--resource", "r\x80"}, "--resource"},
    };
    for (const auto& [args, field] : cases) {
        std::vector<std::string> argv{"store", args[0], "--db", db->url()};
        argv.insert(argv.end(), args.begin() + 1, args.end());
        auto r = run_cli(argv);
        EXPECT_EQ(r.code, 2) << args[0] << " " << field << ": " << r.err;
        EXPECT_EQ(r.out["error"], "invalid_input") << r.out.dump();
        EXPECT_EQ(r.out["field"], field) << r.out.dump();
        EXPECT_NE(r.err.find(field), std::string::npos) << "stderr names the flag: " << r.err;
    }
    // Unknown scheme, missing required flag (CLI11), missing --db.
    for (auto args : std::vector<std::vector<std::string>>{
             {"store", "write", "--db", "mysql://localhost/x", "--resource", "r", "--fence", "7", "--value", "x"},
             {"store", "write", "--db", db->url(), "--resource", "r", "--value", "x"},
             {"store", "claim", "--db", db->url(), "--resource", "r", "--fence", "7"},
             {"store", "write", "--resource", "r", "--fence", "7", "--value", "x"}}) {
        auto r = run_cli(args);
        EXPECT_EQ(r.code, 2) << r.err;
        EXPECT_EQ(r.out["error"], "invalid_input") << r.out.dump();
    }
    EXPECT_EQ(db->snapshot(), before);
}

TEST_P(CliTest, UnreachableDatabaseExitsFourAndChangesNothing) {
    create("r", "v0");
    const std::string before = db->snapshot();
    const std::string url = GetParam() == Backend::sqlite
                                ? "sqlite:///nonexistent-dir-" + std::to_string(::getpid()) + "/x.db"
                                : "postgresql://postgres@127.0.0.1:" + std::to_string(free_port()) + "/postgres";
    for (const std::string sub : {"write", "read", "claim", "init"}) {
        std::vector<std::string> args{"store", sub, "--db", url};
        if (sub != "init") args.insert(args.end(), {"--resource", "r"});
        if (sub == "write" || sub == "claim") args.insert(args.end(), {"--fence", "9"});
        if (sub == "write") args.insert(args.end(), {"--value", "x"});
        if (sub == "claim") args.insert(args.end(), {"--owner", "me"});
        auto r = run_cli(args);
        EXPECT_EQ(r.code, 4) << sub << ": " << r.err;
        EXPECT_EQ(r.out["error"], "store");
        EXPECT_EQ(r.out["code"], "unavailable") << r.out.dump();
        EXPECT_EQ(r.out["kind"], "retryable");
    }
    // A database without the tables: exit 4 too, nothing created.
    if (GetParam() == Backend::sqlite) {
        EXPECT_FALSE(std::filesystem::exists(url.substr(9)));
    }
    EXPECT_EQ(db->snapshot(), before);
}

TEST_P(CliTest, DatabaseWithoutSchemaIsReported) {
    TestDatabase empty(GetParam());
    if (GetParam() == Backend::sqlite) empty.execute("CREATE TABLE unrelated (x INTEGER)");
    auto r = run_cli({"store", "write", "--db", empty.url(), "--resource", "r", "--fence", "1", "--value", "x"});
    EXPECT_EQ(r.code, 4);
    EXPECT_EQ(r.out["code"], "invalid_schema") << r.out.dump();
    EXPECT_EQ(r.out["kind"], "fatal");
    EXPECT_EQ(empty.query("SELECT count(*) FROM " + std::string(GetParam() == Backend::sqlite
                                                                    ? "sqlite_master WHERE name LIKE 'fencelock%'"
                                                                    : "pg_tables WHERE tablename LIKE 'fencelock%'")),
              "0\n");
}

TEST_P(CliTest, RelayPublishesTheOutbox) {
    RedisServer redis;
    create("r");
    for (std::uint64_t f = 1; f <= 3; ++f) {
        auto t = store->transact(res("r"), FencingToken(f), {}, [](Transaction& tx) -> std::expected<void, StoreError> {
            if (auto id = tx.publish("cli-events", "e" + std::to_string(tx.fence().value())); !id)
                return std::unexpected(id.error());
            return {};
        });
        ASSERT_TRUE(t && t->status == TransactStatus::committed);
    }
    auto r = run_cli({"--redis", redis.url(), "store", "relay", "--db", db->url(), "--batch", "2"});
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out["published"], 3);
    EXPECT_EQ(redis.cli({"XLEN", "cli-events"}), "3");
    EXPECT_EQ(run_cli({"--redis", redis.url(), "store", "relay", "--db", db->url()}).out["published"], 0);
}

INSTANTIATE_TEST_SUITE_P(Backends, CliTest, ::testing::Values(Backend::sqlite, Backend::postgresql), backend_name);

}  // namespace
}  // namespace fencelock::test_support
