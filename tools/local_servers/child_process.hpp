#pragma once
// Child processes for tests and the demo: run a program, capture its stdout, get its exit code.
#include <sys/types.h>

#include <string>
#include <vector>

namespace fencelock::local {

struct ProcessResult {
    int exit_code = -1;  ///< -1 when killed by a signal
    std::string out;     ///< stdout
    std::string err;     ///< stderr
};

/// Runs argv[0] (looked up in PATH unless it has a '/') with the given extra environment
/// entries ("NAME=value"), waits for it and returns its exit code and output.
ProcessResult run_process(const std::vector<std::string>& argv, const std::vector<std::string>& env = {});

/// Starts a child without waiting; stdout and stderr go to the given files (empty: inherit).
pid_t start_process(const std::vector<std::string>& argv, const std::string& stdout_path = {},
                    const std::string& stderr_path = {});

/// Waits for a child started with start_process; returns its exit code (-1 if signalled).
int wait_process(pid_t pid);

}  // namespace fencelock::local
