#pragma once
// `fencelock queue ...` and `fencelock worker` run as a user runs them, against the fixture's
// redis-server (queue_fixture.hpp).
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "local_servers/child_process.hpp"
#include "queue_fixture.hpp"

namespace fencelock::test_support {

/// The lines of a command's stdout, each parsed (list, enqueue --stdin).
inline std::vector<nlohmann::json> json_lines(const std::string& out) {
    std::vector<nlohmann::json> lines;
    std::istringstream in(out);
    for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
    return lines;
}

/// SIGKILLs and reaps a worker the test did not stop itself (a failed ASSERT left early).
struct StopIfLeft {
    pid_t pid;
    bool stopped = false;
    int stop(int sig) {
        ::kill(pid, sig);
        stopped = true;
        return local::wait_process(pid);
    }
    ~StopIfLeft() {
        if (!stopped) {
            ::kill(pid, SIGKILL);
            local::wait_process(pid);
        }
    }
};

class QueueCliTest : public QueueTest {
protected:
    local::ProcessResult cli(std::vector<std::string> args) {
        args.insert(args.begin(), {FENCELOCK_CLI, "--redis", redis->url()});
        return local::run_process(args);
    }
    /// cli() with the file `input` as its stdin.
    local::ProcessResult cli_with_stdin(const std::filesystem::path& input, std::vector<std::string> args) {
        args.insert(args.begin(), {"sh", "-c", "exec \"$0\" \"$@\" < \"$FENCELOCK_TEST_INPUT\"", FENCELOCK_CLI,
                                   "--redis", redis->url()});
        return local::run_process(args, {"FENCELOCK_TEST_INPUT=" + input.string()});
    }
    std::string slurp(const std::filesystem::path& p) const {
        std::ifstream in(p);
        std::stringstream ss;
        ss << in.rdbuf();
        return ss.str();
    }
};

}  // namespace fencelock::test_support
