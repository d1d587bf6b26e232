// The fencelock CLI over TLS, as a team on managed Redis runs it: every lock and ops command
// over rediss:// with the CA given in the URL, as a flag or in the environment; tls_insecure
// shown in inspect and list; a bad certificate and bad credentials are exit 4 with their own
// code, naming 127.0.0.1:PORT, with nothing written; a password holding '@', ':' and '%'
// reaches no output.
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "integration/lock_fixture.hpp"
#include "local_servers/child_process.hpp"
#include "local_servers/redis_server.hpp"
#include "local_servers/tls_files.hpp"

namespace fencelock::test_support {
namespace {

using local::ProcessResult;
using local::RedisServer;
using local::RedisServerOptions;
using local::RedisTlsOptions;
using local::run_process;
using local::TlsClientAuth;
using nlohmann::json;

// The ACL user the test connects as; its password holds every byte a URL must encode.
constexpr const char* app_password = "p@ss:w%rd-Leak";
constexpr const char* app_password_in_url = "p%40ss%3Aw%25rd-Leak";

class TlsCliTest : public ::testing::Test {
protected:
    const local::TlsFiles& files = local::shared_tls_files();
    RedisServer server{
        RedisServerOptions{.tls = RedisTlsOptions{.cert_file = files.server_cert,
                                                  .key_file = files.server_key,
                                                  .ca_cert_file = files.ca_cert,
                                                  .client_auth = TlsClientAuth::optional,
                                                  .cli_cert_file = files.client_cert,
                                                  .cli_key_file = files.client_key},
                           // As on managed Redis: the default user is off, so no password means no access.
                           .acl_users = {"default off", std::string("app on >") + app_password + " ~* &* +@all",
                                         "admin on >admin-pw ~* &* +@all"},
                           .cli_user = "admin",
                           .cli_password = "admin-pw"}};

    std::string url(const std::string& query = "") const {
        return "rediss://app:" + std::string(app_password_in_url) + "@127.0.0.1:" + std::to_string(server.tls_port()) +
               query;
    }
    static ProcessResult fencelock(const std::string& redis, std::vector<std::string> args,
                                   std::vector<std::string> env = {}) {
        args.insert(args.begin(), {FENCELOCK_CLI, "--redis", redis, "--timeout", "2s"});
        return run_process(args, env);
    }
    static json last_json_line(const std::string& text) {
        const auto end = text.find_last_not_of('\n');
        const auto start = text.rfind('\n', end);
        return json::parse(text.substr(start == std::string::npos ? 0 : start + 1), nullptr, false);
    }
    static void expect_no_password(const ProcessResult& r) {
        for (const char* secret : {app_password, app_password_in_url, "Leak"})
            EXPECT_EQ((r.out + r.err).find(secret), std::string::npos) << secret << " in: " << r.out << r.err;
    }
    /// A failed command: exit 4, JSON code `code`, a detail naming the TLS port, no password.
    void expect_exit_four(const ProcessResult& r, const std::string& code) const {
        EXPECT_EQ(r.exit_code, 4) << r.out << r.err;
        const json e = last_json_line(r.out);
        EXPECT_EQ(e.value("error", ""), "redis") << r.out;
        EXPECT_EQ(e.value("code", ""), code) << r.out;
        EXPECT_NE(e.value("detail", "").find("127.0.0.1:" + std::to_string(server.tls_port())), std::string::npos)
            << r.out;
        expect_no_password(r);
    }
};

TEST_F(TlsCliTest, EveryLockAndOpsCommandWorksOverRediss) {
    const std::string redis = url("?tls_ca=" + files.ca_cert);
    const auto acquired = fencelock(redis, {"acquire", "order:1", "--lease", "30s"});
    ASSERT_EQ(acquired.exit_code, 0) << acquired.out << acquired.err;
    const json a = json::parse(acquired.out);
    const std::string owner = a["owner"];
    EXPECT_EQ(server.cli({"HGET", "lock:{order:1}", "owner"}), owner);

    const auto renewed = fencelock(redis, {"renew", "order:1", "--owner", owner, "--lease", "30s"});
    EXPECT_EQ(renewed.exit_code, 0) << renewed.out << renewed.err;
    const auto inspected = fencelock(redis, {"inspect", "order:1"});
    ASSERT_EQ(inspected.exit_code, 0) << inspected.err;
    const json i = json::parse(inspected.out);
    EXPECT_EQ(i["owner"], owner);
    EXPECT_FALSE(i.contains("tls_insecure"));
    const auto listed = fencelock(redis, {"list"});
    ASSERT_EQ(listed.exit_code, 0) << listed.err;
    EXPECT_EQ(json::parse(listed.out)["resource"], "order:1");
    const auto released = fencelock(redis, {"release", "order:1", "--owner", owner});
    EXPECT_EQ(released.exit_code, 0) << released.out << released.err;
    EXPECT_EQ(server.cli({"EXISTS", "lock:{order:1}"}), "0");
    const auto audit = fencelock(redis, {"audit"});
    EXPECT_EQ(audit.exit_code, 0) << audit.err;
    for (const auto* r : {&acquired, &renewed, &inspected, &listed, &released, &audit}) expect_no_password(*r);
}

TEST_F(TlsCliTest, TheCaComesFromAFlagOrTheEnvironment) {
    const auto by_flag = fencelock(url(), {"--tls-ca", files.ca_cert, "acquire", "a", "--lease", "30s"});
    EXPECT_EQ(by_flag.exit_code, 0) << by_flag.out << by_flag.err;
    const auto by_env = fencelock(url(), {"acquire", "b", "--lease", "30s"}, {"FENCELOCK_TLS_CA=" + files.ca_cert});
    EXPECT_EQ(by_env.exit_code, 0) << by_env.out << by_env.err;
    EXPECT_EQ(server.cli({"EXISTS", "lock:{a}", "lock:{b}"}), "2");
}

TEST_F(TlsCliTest, InsecureIsShownByInspectAndListAndWarnedAbout) {
    ASSERT_EQ(fencelock(url("?tls_ca=" + files.ca_cert), {"acquire", "order:1", "--lease", "30s"}).exit_code, 0);
    for (const auto& command : {std::vector<std::string>{"inspect", "order:1"}, std::vector<std::string>{"list"}}) {
        const auto r = fencelock(url("?tls_insecure=1"), command);
        ASSERT_EQ(r.exit_code, 0) << r.err;
        EXPECT_EQ(json::parse(r.out).value("tls_insecure", false), true) << r.out;
        EXPECT_NE(r.err.find("tls_insecure"), std::string::npos) << r.err;
    }
}

TEST_F(TlsCliTest, AnUnknownCaIsExitFourWithItsCodeAndWritesNothing) {
    const std::string before = server.snapshot();
    expect_exit_four(fencelock(url("?tls_ca=" + files.other_ca_cert), {"acquire", "order:1", "--lease", "30s"}),
                     "tls_unknown_ca");
    EXPECT_EQ(server.snapshot(), before);
}

TEST_F(TlsCliTest, AMissingPasswordAWrongOneAndAnUnknownUserSayWhichAndLeakNothing) {
    const std::string before = server.snapshot();
    const std::string at = "127.0.0.1:" + std::to_string(server.tls_port()) + "?tls_ca=" + files.ca_cert;
    const std::vector<std::string> acquire{"acquire", "order:1", "--lease", "30s"};
    expect_exit_four(fencelock("rediss://" + at, acquire), "auth_required");
    const auto wrong = fencelock("rediss://app:Leak%40wrong@" + at, acquire);
    expect_exit_four(wrong, "auth_rejected");
    // Redis answers a wrong password and an unknown user alike (WRONGPASS), on purpose; the
    // detail names the user so the operator can check both.
    const auto nobody = fencelock("rediss://nobody:Leak%3Ax@" + at, acquire);
    expect_exit_four(nobody, "auth_rejected");
    EXPECT_NE(last_json_line(nobody.out).value("detail", "").find("'nobody'"), std::string::npos) << nobody.out;
    EXPECT_EQ(server.snapshot(), before);
}

}  // namespace
}  // namespace fencelock::test_support
