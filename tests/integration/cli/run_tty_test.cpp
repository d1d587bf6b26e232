// `fencelock run` on a terminal, as people use flock: CMD in its own process group must still
// be able to read the terminal (it used to stop on SIGTTIN and never finish while the lease was
// renewed on), and fencelock must take the terminal back when CMD ends.
#include <pty.h>
#include <termios.h>

#include "integration/cli/run_fixture.hpp"

namespace fencelock::test_support {
namespace {

/// fencelock started by forkpty(): a session of its own whose controlling terminal is a
/// pseudo-terminal, with fencelock's group in the foreground, as an interactive shell runs it.
class RunTtyTest : public RunTest {
protected:
    void TearDown() override {
        if (master >= 0) ::close(master);
        RunTest::TearDown();
    }
    pid_t start_on_terminal(std::vector<std::string> argv) {
        auto args = c_strings(argv);
        const pid_t pid = ::forkpty(&master, nullptr, nullptr, nullptr);
        if (pid == 0) {
            // TOSTOP: a background process writing to the terminal gets SIGTTOU and stops. fencelock
            // writes its summary there after CMD, so a terminal not taken back shows as a hang.
            termios mode{};
            ::tcgetattr(0, &mode);
            mode.c_lflag |= TOSTOP;
            mode.c_lflag &= ~static_cast<tcflag_t>(ECHO);
            ::tcsetattr(0, TCSANOW, &mode);
            ::execv(args[0], args.data());
            ::_exit(127);
        }
        if (pid > 0) running.push_back(pid);
        return pid;
    }
    static std::vector<char*> c_strings(std::vector<std::string>& strings) {
        std::vector<char*> out;
        for (auto& s : strings) out.push_back(s.data());
        out.push_back(nullptr);
        return out;
    }
    /// Everything the terminal showed until fencelock closed it.
    std::string drain() const {
        std::string text;
        char buffer[4096];
        for (ssize_t n; (n = ::read(master, buffer, sizeof buffer)) > 0 || (n < 0 && errno == EINTR);)
            if (n > 0) text.append(buffer, static_cast<std::size_t>(n));
        return text;  // EIO once every process of the session has closed the terminal
    }

    int master = -1;
};

TEST_F(RunTtyTest, CmdReadsTheTerminalAndFencelockTakesItBack) {
    const pid_t run = start_on_terminal(run_args(
        "tty", {"--lease", "5s"}, R"(read line; echo "got:$line" > "$1/read"; test -t 0 && echo tty >> "$1/read")"));
    ASSERT_GT(run, 0);
    // The terminal keeps the line until CMD reads it.
    const std::string line = "hello\n";
    ASSERT_EQ(::write(master, line.data(), line.size()), static_cast<ssize_t>(line.size()));
    ASSERT_EQ(wait_exit(run), 0) << "CMD stopped reading the terminal, or fencelock writing to it";
    EXPECT_EQ(slurp(path("read")), "got:hello\ntty\n");
    const std::string shown = drain();
    EXPECT_NE(shown.find("\"result\":\"completed\""), std::string::npos)
        << "the summary reached the terminal: " << shown;
    EXPECT_FALSE(lock_exists("tty"));
}

// ^Z stops CMD's group, which has the terminal: fencelock stops too, so a shell sees its job
// stopped and gets the terminal back (else it waits on a running fencelock and the terminal
// stays with a stopped group). fg (SIGCONT to fencelock) hands the terminal back to CMD.
TEST_F(RunTtyTest, SuspendStopsFencelockWithCmdAndContinueResumesBoth) {
    const pid_t run = start_on_terminal(
        run_args("suspend", {"--lease", "5s"}, std::string(announce) + R"(read line; echo "got:$line" > "$1/read")"));
    ASSERT_GT(run, 0);
    ASSERT_GT(wait_started(), 0);
    termios mode{};
    ASSERT_EQ(::tcgetattr(master, &mode), 0);
    const char suspend = static_cast<char>(mode.c_cc[VSUSP]);  // ^Z
    ASSERT_EQ(::write(master, &suspend, 1), 1);
    int status = 0;
    ASSERT_TRUE(eventually([&] { return ::waitpid(run, &status, WNOHANG | WUNTRACED) == run; }))
        << "fencelock kept running while CMD was stopped";
    ASSERT_TRUE(WIFSTOPPED(status));
    ASSERT_EQ(::kill(run, SIGCONT), 0);  // what the shell's fg does (after giving fencelock the terminal)
    const std::string line = "resumed\n";
    ASSERT_EQ(::write(master, line.data(), line.size()), static_cast<ssize_t>(line.size()));
    ASSERT_EQ(wait_exit(run), 0);
    EXPECT_EQ(slurp(path("read")), "got:resumed\n");
    EXPECT_NE(drain().find("\"result\":\"completed\""), std::string::npos);
}

// Without a terminal nothing changes: CMD reads fencelock's stdin from its own group.
TEST_F(RunTtyTest, WithoutATerminalCmdReadsStdinAsBefore) {
    const std::string input = path("input");
    { std::ofstream(input) << "from-file\n"; }
    auto piped = local::run_process({"sh", "-c", "exec \"$@\" < " + input, "sh", FENCELOCK_CLI, "--redis", redis->url(),
                                     "run", "notty", "--lease", "5s", "--", "sh", "-c",
                                     R"(read line; echo "$line"; test -t 0 || echo no-tty)"});
    EXPECT_EQ(piped.exit_code, 0) << piped.err;
    EXPECT_EQ(piped.out, "from-file\nno-tty\n");
}

}  // namespace
}  // namespace fencelock::test_support
