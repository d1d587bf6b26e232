// No byte of a password in a database or Redis URL reaches the CLI's stdout or stderr: not in
// our messages, not in libpq's, whatever the password contains ('@', ':', '/', '%'). Regression:
// libpq split `postgresql://u:p@ss@host/db` at the first '@' and printed the rest of the
// password as part of the host name.
#include <nlohmann/json.hpp>

#include "local_servers/child_process.hpp"
#include "local_servers/redis_server.hpp"
#include "store_fixture.hpp"
#include "support/secrets.hpp"

namespace fencelock::test_support {
namespace {

using local::free_port;
using local::PostgresServer;
using local::ProcessResult;
using local::RedisServer;
using local::run_process;
using nlohmann::json;

struct Run {
    int code;
    std::string output;  ///< stdout + stderr
};

Run fencelock(std::vector<std::string> args) {
    args.insert(args.begin(), FENCELOCK_CLI);
    ProcessResult r = run_process(args, {"FENCELOCK_DB_URL=", "FENCELOCK_REDIS_URL="});
    return {r.exit_code, r.out + r.err};
}

/// Runs `args` and checks the exit code and that no fragment of any secret appears.
void expect_no_leak(const std::vector<std::string>& args, int code, const std::vector<std::string>& secrets,
                    const std::string& what) {
    const Run r = fencelock(args);
    EXPECT_EQ(r.code, code) << what << ": " << r.output;
    for (const auto& s : secrets)
        EXPECT_EQ(leaked_fragments(r.output, s), std::vector<std::string>{}) << what << ": " << r.output;
}

constexpr const char* role = "fl_secret";
constexpr const char* right_password = "Ri9@ht:Pw@X7";      // written raw in the URL
constexpr const char* wrong_password = "Qz@9vK:x@Jw7";      // written raw in the URL
constexpr const char* encoded_wrong = "Hb%40tr7%2Fk%3FnQ";  // percent-encoded ...
constexpr const char* decoded_wrong = "Hb@tr7/k?nQ";        // ... of this

TEST(SecretTest, PostgresPasswordNeverReachesTheOutput) {
    PostgresServer& server = shared_postgres();
    server.require_password(role, right_password);
    const std::string dbname = server.create_database("secret").substr(server.url("").size());
    const std::string host = "@127.0.0.1:" + std::to_string(server.port());
    const std::string down = "@127.0.0.1:" + std::to_string(free_port());
    const std::string user = std::string("postgresql://") + role + ":";
    const std::vector<std::string> secrets = {right_password, wrong_password, encoded_wrong, decoded_wrong};
    auto write = [](const std::string& url) {
        return std::vector<std::string>{"store", "write",   "--db", url,       "--resource",
                                        "r",     "--fence", "1",    "--value", "x"};
    };

    // The right password (with '@' and ':') reaches the server whole: init succeeds.
    expect_no_leak({"store", "init", "--db", user + right_password + host + "/" + dbname}, 0, secrets, "right");
    const std::vector<std::pair<std::string, std::string>> failing = {
        {"wrong password", user + wrong_password + host + "/" + dbname},
        {"wrong percent-encoded password", user + encoded_wrong + host + "/" + dbname},
        {"wrong password in the query",
         std::string("postgresql://") + role + host + "/" + dbname + "?password=" + encoded_wrong},
        {"unreachable port", user + right_password + down + "/" + dbname},
        {"no such database", "postgresql://postgres:" + std::string(wrong_password) + host + "/no_such_db"},
    };
    for (const auto& [what, url] : failing) expect_no_leak(write(url), 4, secrets, what);
    // A raw '/' or '?' would end the host part early: the URL is refused, its text not quoted.
    expect_no_leak(write(user + "Qz@9v/K:x@Jw7" + host + "/" + dbname), 2, {"Qz@9v/K:x@Jw7"}, "raw '/'");
    expect_no_leak(write(user + "Qz@9v?K:x@Jw7" + host + "/" + dbname), 2, {"Qz@9v?K:x@Jw7"}, "raw '?'");
}

TEST(SecretTest, RedisPasswordNeverReachesTheOutput) {
    RedisServer redis({"--requirepass", right_password});
    TestDatabase db(Backend::sqlite);
    // One unsent outbox event, so that `store relay` has to talk to Redis.
    FencedStore store = open_store(db.url());
    ASSERT_TRUE(store.init());
    ASSERT_TRUE(store.create_resource(res("r")));
    auto t = store.transact(res("r"), FencingToken(1), {}, [](Transaction& tx) -> std::expected<void, StoreError> {
        if (auto id = tx.publish("events", "{}"); !id) return std::unexpected(id.error());
        return {};
    });
    ASSERT_TRUE(t && t->status == TransactStatus::committed);
    const std::string up = "@127.0.0.1:" + std::to_string(redis.port());
    const std::string down = "@127.0.0.1:" + std::to_string(free_port());
    const std::vector<std::string> secrets = {right_password, wrong_password, encoded_wrong, decoded_wrong};
    const std::vector<std::pair<std::string, std::string>> urls = {
        {"wrong password", "redis://:" + std::string(wrong_password) + up},
        {"unknown user", "redis://u:" + std::string(wrong_password) + up},
        {"wrong percent-encoded password", "redis://u:" + std::string(encoded_wrong) + up},
        {"unreachable port", "redis://u:" + std::string(right_password) + down},
    };
    for (const auto& [what, url] : urls) {
        expect_no_leak({"--redis", url, "inspect", "r"}, 4, secrets, what + " (inspect)");
        expect_no_leak({"--redis", url, "queue", "stats", "--queue", "q"}, 4, secrets, what + " (queue)");
        expect_no_leak({"--redis", url, "store", "relay", "--db", db.url()}, 4, secrets, what + " (relay)");
    }
    // The right password with '@' and ':' is delivered whole.
    expect_no_leak({"--redis", "redis://:" + std::string(right_password) + up, "inspect", "r"}, 0, secrets, "right");
}

}  // namespace
}  // namespace fencelock::test_support
