// inspect, list and audit for people and for scripts (README, "Output"): a table on a
// terminal, JSON lines anywhere else, --table and --json to force either.
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "integration/lock_fixture.hpp"
#include "local_servers/child_process.hpp"

namespace fencelock::test_support {
namespace {

using local::ProcessResult;
using local::run_process;
using nlohmann::json;

class HumanOutputTest : public LockTest {
protected:
    ProcessResult fencelock(std::vector<std::string> args) {
        args.insert(args.begin(), {FENCELOCK_CLI, "--redis", redis->url()});
        return run_process(args);
    }
    /// What fencelock ARGS shows on a terminal (stdout a pseudo-terminal), once it exits.
    std::string on_terminal(std::vector<std::string> args) {
        args.insert(args.begin(), {FENCELOCK_CLI, "--redis", redis->url()});
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        int master = -1;
        const pid_t pid = ::forkpty(&master, nullptr, nullptr, nullptr);
        if (pid == 0) {
            ::execv(argv[0], argv.data());
            ::_exit(127);
        }
        std::string shown;
        char buffer[4096];
        for (ssize_t n; (n = ::read(master, buffer, sizeof buffer)) > 0 || (n < 0 && errno == EINTR);)
            if (n > 0) shown.append(buffer, static_cast<std::size_t>(n));
        ::close(master);
        int status = 0;
        ::waitpid(pid, &status, 0);
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << shown;
        return shown;  // the terminal writes "\r\n" for each "\n"
    }
};

TEST_F(HumanOutputTest, ATerminalGetsATableAndAPipeGetsJsonLines) {
    ASSERT_EQ(fencelock({"--label", "nightly", "acquire", "order:42", "--lease", "30s"}).exit_code, 0);
    const std::string table = on_terminal({"list"});
    EXPECT_EQ(table.find('{'), std::string::npos) << table;
    for (const char* part : {"RESOURCE", "EXPIRES IN", "LAST RENEWAL", "order:42", "never", "nightly on "})
        EXPECT_NE(table.find(part), std::string::npos) << part << " in\n" << table;

    const auto piped = fencelock({"list"});
    EXPECT_EQ(piped.exit_code, 0);
    EXPECT_EQ(json::parse(piped.out, nullptr, false)["resource"], "order:42") << piped.out;
    const auto forced = fencelock({"list", "--table"});
    EXPECT_EQ(forced.out.substr(0, 8), "RESOURCE") << forced.out;
    EXPECT_EQ(json::parse(on_terminal({"list", "--json"}), nullptr, false)["resource"], "order:42");
}

TEST_F(HumanOutputTest, InspectShowsOneRecordAsNamedFields) {
    ASSERT_EQ(fencelock({"acquire", "order:42", "--lease", "30s"}).exit_code, 0);
    const auto held = fencelock({"inspect", "order:42", "--table"});
    ASSERT_EQ(held.exit_code, 0) << held.err;
    for (const char* part : {"resource       order:42\n", "held           yes, by ", "last renewal   never\n",
                             "expires in     ", "(lease 30.0s)", "last fence     "})
        EXPECT_NE(held.out.find(part), std::string::npos) << part << " in\n" << held.out;
    const auto free = fencelock({"inspect", "order:43", "--table"});
    EXPECT_NE(free.out.find("held          no\n"), std::string::npos) << free.out;
}

TEST_F(HumanOutputTest, NothingToShowSaysSoToPeopleAndNothingToScripts) {
    EXPECT_EQ(fencelock({"list", "--table"}).out, "no locks held\n");
    EXPECT_EQ(fencelock({"list"}).out, "");
    EXPECT_EQ(fencelock({"audit", "--table"}).out, "no audited interventions\n");
    EXPECT_EQ(fencelock({"audit"}).out, "");
}

TEST_F(HumanOutputTest, AuditTableNamesWhoWhyAndHow) {
    ASSERT_EQ(fencelock({"acquire", "stuck", "--lease", "30s"}).exit_code, 0);
    ASSERT_EQ(
        fencelock({"force-release", "stuck", "--reason", "host gone", "--even-if-active", "--operator", "carol@ops"})
            .exit_code,
        0);
    const auto audit = fencelock({"audit", "--table"});
    for (const char* part : {"TIME", "OPERATOR", "REASON", "carol@ops", "host gone", "active (--even-if-active)"})
        EXPECT_NE(audit.out.find(part), std::string::npos) << part << " in\n" << audit.out;
}

TEST_F(HumanOutputTest, JsonAndTableTogetherAreRefused) {
    const auto both = fencelock({"list", "--json", "--table"});
    EXPECT_EQ(both.exit_code, 2);
    EXPECT_NE(both.err.find("--table"), std::string::npos) << both.err;
}

}  // namespace
}  // namespace fencelock::test_support
