// The Redis password stays with fencelock: the command `run` starts inherits none of
// fencelock's Redis credentials, `ps` (/proc/<pid>/cmdline) no longer shows a password given
// in --redis, and --redis-password-file / $FENCELOCK_REDIS_PASSWORD keep it out of the URL.
#include <fstream>
#include <string>

#include "integration/cli/run_fixture.hpp"
#include "support/secrets.hpp"

namespace fencelock::test_support {
namespace {

// '@', ':' and '%' percent-encoded in URLs; the server's password is the decoded text.
const std::string password = "s3cr@t:p%ss";
const std::string encoded = "s3cr%40t%3Ap%25ss";

class RunSecretTest : public RunTest {
protected:
    void SetUp() override {
        RunTest::SetUp();
        redis = std::make_unique<local::RedisServer>(std::vector<std::string>{"--requirepass", password});
    }
    std::string url_with_password() const {
        return "redis://:" + encoded + "@127.0.0.1:" + std::to_string(redis->port());
    }
    std::string plain_url() const { return "redis://127.0.0.1:" + std::to_string(redis->port()); }
    std::string secured_cli(const std::vector<std::string>& args) const {
        std::vector<std::string> all{"-a", password, "--no-auth-warning"};
        all.insert(all.end(), args.begin(), args.end());
        return redis->cli(all);
    }
    static std::string cmdline(pid_t pid) {
        std::string text = slurp("/proc/" + std::to_string(pid) + "/cmdline");
        std::replace(text.begin(), text.end(), '\0', ' ');
        return text;
    }
};

TEST_F(RunSecretTest, TheCommandInheritsNoRedisCredentials) {
    const std::vector<std::string> argv{FENCELOCK_CLI, "run", "secret-env",        "--lease", "5s",        "--",
                                        "sh",          "-c",  R"(env > "$1/env")", "sh",      dir.string()};
    auto r = local::run_process(argv,
                                {"FENCELOCK_REDIS_URL=" + url_with_password(), "FENCELOCK_REDIS_PASSWORD=" + password});
    ASSERT_EQ(r.exit_code, 2) << "the URL and the variable both give a password: " << r.err;
    r = local::run_process(argv, {"FENCELOCK_REDIS_URL=" + url_with_password()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string env = slurp(path("env"));
    ASSERT_NE(env.find("FENCELOCK_FENCE="), std::string::npos) << "the command ran with its lease: " << env;
    EXPECT_EQ(env.find("FENCELOCK_REDIS_URL"), std::string::npos) << env;
    EXPECT_TRUE(leaked_fragments(env, password, 5).empty()) << env;
    EXPECT_TRUE(leaked_fragments(env, encoded, 5).empty()) << env;
}

TEST_F(RunSecretTest, APasswordGivenInRedisLeavesTheCommandLine) {
    const pid_t run = start({FENCELOCK_CLI, "--redis", url_with_password(), "run", "secret-argv", "--lease", "5s", "--",
                             "sh", "-c", std::string(announce) + "exec sleep 60", "sh", dir.string()});
    ASSERT_GT(wait_started(), 0);
    const std::string shown = cmdline(run);
    ASSERT_NE(shown.find("127.0.0.1"), std::string::npos) << "not fencelock's command line: " << shown;
    EXPECT_TRUE(leaked_fragments(shown, encoded, 4).empty()) << shown;
    EXPECT_EQ(secured_cli({"EXISTS", "lock:{secret-argv}"}), "1") << "the scrubbed URL still authenticated";
    ASSERT_EQ(::kill(run, SIGTERM), 0);
    EXPECT_EQ(wait_exit(run), 128 + SIGTERM);
}

TEST_F(RunSecretTest, APasswordFileOrVariableKeepsThePasswordOutOfTheUrl) {
    const std::string file = path("redis.password");
    std::ofstream(file) << password << "\n";
    auto r = local::run_process({FENCELOCK_CLI, "--redis", plain_url(), "--redis-password-file", file, "acquire",
                                 "secret-file", "--lease", "5s"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    r = local::run_process({FENCELOCK_CLI, "--redis", plain_url(), "acquire", "secret-env", "--lease", "5s"},
                           {"FENCELOCK_REDIS_PASSWORD=" + password});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(secured_cli({"EXISTS", "lock:{secret-file}", "lock:{secret-env}"}), "2");

    const std::string before = secured_cli({"DBSIZE"});
    std::ofstream(path("empty")) << "\n";
    for (const auto& bad : std::vector<std::vector<std::string>>{
             {"--redis", url_with_password(), "--redis-password-file", file},  // two passwords
             {"--redis", plain_url(), "--redis-password-file", path("missing")},
             {"--redis", plain_url(), "--redis-password-file", path("empty")}}) {
        std::vector<std::string> argv{FENCELOCK_CLI};
        argv.insert(argv.end(), bad.begin(), bad.end());
        argv.insert(argv.end(), {"acquire", "secret-bad", "--lease", "5s"});
        const auto failed = local::run_process(argv);
        EXPECT_EQ(failed.exit_code, 2) << failed.err;
        EXPECT_EQ(json::parse(failed.out, nullptr, false)["field"], "--redis-password-file")
            << failed.out << failed.err;
        EXPECT_TRUE(leaked_fragments(failed.out + failed.err, password, 5).empty()) << failed.err;
    }
    EXPECT_EQ(secured_cli({"DBSIZE"}), before) << "a refused password source changed Redis";
}

}  // namespace
}  // namespace fencelock::test_support
