// Every failure to reach or enter Redis says which server and why (issue: "Redis unavailable
// (could not connect)" named neither, and a missing password read like a wrong one). The code
// callers act on stays errc::unavailable / auth_failed; error_detail() names the server and the
// cause in words, error_cause() and the CLI's JSON `code` name the cause for programs. No
// password reaches any of it, and nothing is written.
#include <nlohmann/json.hpp>

#include "fencelock/error.hpp"
#include "integration/lock_fixture.hpp"
#include "local_servers/child_process.hpp"
#include "local_servers/silent_server.hpp"

namespace fencelock::test_support {
namespace {

using namespace std::chrono_literals;

using local::SilentServer;

class ConnectErrorTest : public LockTest {
protected:
    /// One acquisition through the library against `url`: its error, detail and cause.
    struct Failure {
        std::error_code code;
        std::string detail, cause;
    };
    Failure library_acquire(const std::string& url) {
        auto endpoint = parse_redis_url(url);
        EXPECT_TRUE(endpoint) << url;
        auto c = LockClient::create(ClientOptions{.endpoint = *endpoint, .connect_timeout = 300ms});
        EXPECT_TRUE(c);
        auto r = c->try_acquire(resource("order:1"), {.lease = 5s});
        EXPECT_FALSE(r) << "acquired at " << url;
        if (r) return {};
        return {r.error(), error_detail(r.error()), error_cause(r.error())};
    }
    /// `fencelock acquire` against `url`: exit code, JSON error object, and all it printed.
    struct CliFailure {
        int exit_code;
        nlohmann::json error;
        std::string printed;
    };
    CliFailure cli_acquire(const std::string& url) {
        auto r = local::run_process({FENCELOCK_CLI, "--redis", url, "acquire", "order:1", "--lease", "5s"});
        return {r.exit_code, nlohmann::json::parse(r.out, nullptr, false), r.out + r.err};
    }
    static bool has(const std::string& text, std::string_view part) { return text.find(part) != std::string::npos; }

    /// Through the library and the CLI alike: `ec` with `cause`, the detail holding `words`.
    void expect_failure(const std::string& url, errc ec, const std::string& cause, const std::string& words) {
        const auto f = library_acquire(url);
        EXPECT_EQ(f.code, ec) << url;
        EXPECT_EQ(f.cause, cause) << url;
        EXPECT_TRUE(has(f.detail, words)) << f.detail;
        const auto cli = cli_acquire(url);
        EXPECT_EQ(cli.exit_code, 4) << cli.printed;
        EXPECT_EQ(cli.error["code"], cause) << cli.printed;
        EXPECT_TRUE(has(cli.error.value("detail", ""), words)) << cli.printed;
    }
};

TEST_F(ConnectErrorTest, ARefusedConnectionNamesTheServerAndTheCause) {
    const std::string at = "127.0.0.1:" + std::to_string(local::free_port());
    expect_failure("redis://" + at, errc::unavailable, "connection_refused", at + ": connection refused");
}

TEST_F(ConnectErrorTest, AnUnknownHostIsANameResolutionFailure) {
    expect_failure("redis://no-such-host.invalid:6379", errc::unavailable, "name_resolution_failed",
                   "no-such-host.invalid:6379: name resolution failed");
}

TEST_F(ConnectErrorTest, AServerThatAcceptsAndNeverAnswersIsAHandshakeTimeout) {
    SilentServer mute;
    const std::string at = "127.0.0.1:" + std::to_string(mute.port());
    expect_failure("redis://" + at, errc::unavailable, "handshake_timeout", at + ": connected, but no reply");
}

TEST_F(ConnectErrorTest, AServerThatHangsUpUnansweredIsToldApartFromARefusal) {
    SilentServer closing(SilentServer::OnAccept::hang_up);
    const std::string at = "127.0.0.1:" + std::to_string(closing.port());
    expect_failure("redis://" + at, errc::unavailable, "handshake_closed", at + ": the server closed the connection");
}

// A missing password, a wrong one and an unknown user: three fixes, three causes (Redis answers
// the last two alike, so the detail says so). The password, full of URL syntax, is never printed.
TEST_F(ConnectErrorTest, AMissingPasswordIsToldApartFromAWrongOneAndNoPasswordIsEverPrinted) {
    const std::string password = "p@ss:w%rd";
    redis->cli({"SET", "fence:{order:1}", "41"});
    const std::string before = redis->snapshot();
    redis->cli({"ACL", "SETUSER", "alice", "on", ">" + password, "~*", "&*", "+@all"});
    redis->cli({"CONFIG", "SET", "requirepass", "default-" + password});
    const std::string at = "127.0.0.1:" + std::to_string(redis->port());
    const std::string escaped = "p%40ss%3Aw%25rd";  // the URL form of the password

    const auto none = library_acquire("redis://" + at);
    EXPECT_EQ(none.code, errc::auth_failed);
    EXPECT_EQ(none.cause, "auth_required");
    EXPECT_TRUE(has(none.detail, at + ": the server requires a password and none was given")) << none.detail;

    const auto wrong = library_acquire("redis://alice:wrong@" + at);
    EXPECT_EQ(wrong.code, errc::auth_failed);
    EXPECT_EQ(wrong.cause, "auth_rejected");
    EXPECT_TRUE(has(wrong.detail, "a wrong password, or no ACL user named 'alice'")) << wrong.detail;

    const auto unknown = library_acquire("redis://mallory:" + escaped + "@" + at);
    EXPECT_EQ(unknown.cause, "auth_rejected");
    EXPECT_TRUE(has(unknown.detail, "'mallory'")) << unknown.detail;
    EXPECT_FALSE(has(unknown.detail, password));

    for (const std::string& url :
         {"redis://" + at, "redis://alice:wrong@" + at, "redis://mallory:" + escaped + "@" + at}) {
        const auto cli = cli_acquire(url);
        EXPECT_EQ(cli.exit_code, 4) << cli.printed;
        EXPECT_TRUE(has(cli.printed, at)) << cli.printed;
        EXPECT_FALSE(has(cli.printed, password) || has(cli.printed, escaped)) << cli.printed;
    }
    EXPECT_EQ(cli_acquire("redis://" + at).error["code"], "auth_required");
    EXPECT_EQ(cli_acquire("redis://alice:wrong@" + at).error["code"], "auth_rejected");
    redis->cli({"-a", "default-" + password, "CONFIG", "SET", "requirepass", ""});
    EXPECT_EQ(redis->snapshot(), before);
}

// An ACL user that may connect but not run scripts: NOPERM names the command refused.
TEST_F(ConnectErrorTest, AnAclRefusalNamesTheCommand) {
    redis->cli({"ACL", "SETUSER", "reader", "on", ">secret", "~*", "&*", "+@all", "-evalsha", "-eval"});
    const std::string before = redis->snapshot();
    // The NOPERM prefix and the command's name: the words between changed in Redis 7.2.
    const std::string url = "redis://reader:secret@127.0.0.1:" + std::to_string(redis->port());
    expect_failure(url, errc::auth_failed, "noperm", "'evalsha'");
    const auto refused = library_acquire(url);
    EXPECT_TRUE(refused.detail.starts_with("NOPERM ")) << refused.detail;
    EXPECT_EQ(redis->snapshot(), before);
}

TEST_F(ConnectErrorTest, NoSentinelAnsweringNamesEachSentinel) {
    const auto a = std::to_string(local::free_port()), b = std::to_string(local::free_port());
    const std::string url = "redis-sentinel://127.0.0.1:" + a + ",127.0.0.1:" + b + "#orders";
    const auto f = library_acquire(url);
    EXPECT_EQ(f.code, errc::unavailable);
    EXPECT_TRUE(has(f.detail, "sentinel 127.0.0.1:" + a + ": ") && has(f.detail, "sentinel 127.0.0.1:" + b + ": "))
        << f.detail;
    EXPECT_TRUE(has(f.detail, "'orders'")) << f.detail;
    EXPECT_EQ(f.cause, "connection_refused");
}

}  // namespace
}  // namespace fencelock::test_support
