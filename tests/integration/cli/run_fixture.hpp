#pragma once
// The `fencelock run` fixture: a real redis-server, fencelock started as a child process, and
// CMD always `sh -c SCRIPT sh DIR`: the script writes files under DIR (its pid, its
// environment, that it ran) so the test can see what happened inside it.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "integration/lock_fixture.hpp"
#include "local_servers/child_process.hpp"

namespace fencelock::test_support {

using nlohmann::json;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

/// Writes its pid to DIR/started (atomically, so a reader never sees an empty file).
inline constexpr const char* announce = R"(echo $$ > "$1/started.tmp" && mv "$1/started.tmp" "$1/started"; )";

/// Runs CMD under `fencelock run` and watches it from outside.
class RunTest : public LockTest {
protected:
    void SetUp() override {
        LockTest::SetUp();
        char tmpl[] = "/tmp/fencelock-run-XXXXXX";
        ASSERT_NE(::mkdtemp(tmpl), nullptr);
        dir = tmpl;
    }
    void TearDown() override {
        // Nothing outlives a test, even a failed one.
        for (pid_t pid : running) {
            ::kill(pid, SIGKILL);
            ::waitpid(pid, nullptr, 0);
        }
        // A CMD orphaned by a failure; after a pass its group is gone (and its id may be reused).
        if (HasFailure())
            for (pid_t group : cmd_groups) ::kill(-group, SIGKILL);
        std::error_code ec;
        fs::remove_all(dir, ec);
    }

    /// fencelock --redis URL ARGS..., with `--json` right after `run` when ARGS run: these
    /// tests read run's summary and error objects.
    std::vector<std::string> cli(std::vector<std::string> args) const {
        if (auto run = std::find(args.begin(), args.end(), "run"); run != args.end()) args.insert(run + 1, "--json");
        return cli_as_is(std::move(args));
    }
    /// fencelock --redis URL ARGS..., nothing added.
    std::vector<std::string> cli_as_is(std::vector<std::string> args) const {
        args.insert(args.begin(), {FENCELOCK_CLI, "--redis", redis->url()});
        return args;
    }
    /// `run RESOURCE --json FLAGS... -- sh -c SCRIPT sh DIR`: with its summary on stderr.
    std::vector<std::string> run_args(const std::string& r, std::vector<std::string> flags,
                                      const std::string& script) const {
        return cli(run_words(r, std::move(flags), script));
    }
    /// `run RESOURCE FLAGS... -- sh -c SCRIPT sh DIR`, as a script ported from flock runs it.
    std::vector<std::string> plain_run(const std::string& r, std::vector<std::string> flags,
                                       const std::string& script) const {
        return cli_as_is(run_words(r, std::move(flags), script));
    }
    std::vector<std::string> run_words(const std::string& r, std::vector<std::string> flags,
                                       const std::string& script) const {
        std::vector<std::string> args{"run", r};
        args.insert(args.end(), flags.begin(), flags.end());
        args.insert(args.end(), {"--", "sh", "-c", script, "sh", dir.string()});
        return args;
    }
    /// Starts fencelock in the background; its stdout goes to DIR/fencelock.out, its stderr
    /// (with the summary) to DIR/fencelock.err.
    pid_t start(const std::vector<std::string>& argv) {
        pid_t pid = local::start_process(argv, path("fencelock.out"), path("fencelock.err"));
        running.push_back(pid);
        return pid;
    }
    /// Waits for a started fencelock to exit; its exit code (-1: killed by a signal).
    int wait_exit(pid_t pid) {
        int status = 0;
        const bool exited = eventually([&] { return ::waitpid(pid, &status, WNOHANG) == pid; }, 30s);
        if (!exited) {
            ADD_FAILURE() << "fencelock did not exit";
            return -2;
        }
        std::erase(running, pid);
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
    /// Waits for CMD to write DIR/started; its pid.
    pid_t wait_started() {
        if (!eventually([&] { return fs::exists(path("started")); })) {
            ADD_FAILURE() << "CMD never started";
            return -1;
        }
        const pid_t pid = std::stoi(slurp(path("started")));
        cmd_groups.push_back(pid);
        return pid;
    }

    std::string path(const std::string& name) const { return (dir / name).string(); }
    static std::string slurp(const std::string& file) {
        std::ifstream in(file);
        std::stringstream ss;
        ss << in.rdbuf();
        return ss.str();
    }
    static std::vector<std::string> lines(const std::string& text) {
        std::vector<std::string> out;
        std::istringstream in(text);
        for (std::string line; std::getline(in, line);) out.push_back(line);
        return out;
    }
    /// fencelock's summary (or error object): the last line of its stderr, after whatever
    /// diagnostics and log lines came before it.
    static json summary(const std::string& err) {
        const auto all = lines(err);
        EXPECT_FALSE(all.empty()) << "no summary on stderr";
        json j = json::parse(all.empty() ? std::string() : all.back(), nullptr, false);
        EXPECT_TRUE(j.is_object()) << err;
        return j;
    }
    static bool process_gone(pid_t pid) { return ::kill(pid, 0) != 0 && errno == ESRCH; }
    bool lock_exists(const std::string& r) const { return redis->cli({"EXISTS", "lock:{" + r + "}"}) == "1"; }
    long connections_received() const {
        const std::string info = redis->cli({"INFO", "stats"});
        const std::string marker = "total_connections_received:";
        return std::stol(info.substr(info.find(marker) + marker.size()));
    }
    long connected_clients() const {
        const std::string info = redis->cli({"INFO", "clients"});
        const std::string marker = "connected_clients:";
        return std::stol(info.substr(info.find(marker) + marker.size()));
    }
    static double seconds_since(std::chrono::steady_clock::time_point t) {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
    }

    fs::path dir;
    std::vector<pid_t> running;     // fencelock processes not yet waited for
    std::vector<pid_t> cmd_groups;  // CMD process groups seen
};

}  // namespace fencelock::test_support
