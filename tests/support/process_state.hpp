#pragma once
// Whether a process has ended, as seen from a test that is not its parent. A killed process
// whose new parent has not reaped it yet is a zombie: kill(pid, 0) still succeeds, so the
// state letter in /proc/PID/stat decides (Z zombie, X dead).
#include <sys/types.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace fencelock::test_support {

/// The state letter of a /proc stat file ("PID (COMM) STATE ..."), or 0 when it is gone.
inline char proc_state(const std::string& stat_path) {
    std::ifstream in(stat_path);
    std::string stat;
    if (!std::getline(in, stat)) return 0;
    // COMM may hold spaces and parentheses, so look after the last ')'.
    const auto paren = stat.rfind(')');
    if (paren == std::string::npos || paren + 2 >= stat.size()) return 0;
    return stat[paren + 2];
}

/// True when `pid` no longer runs: no such process, or a zombie waiting to be reaped.
inline bool process_ended(pid_t pid) {
    const char state = proc_state("/proc/" + std::to_string(pid) + "/stat");
    return state == 0 || state == 'Z' || state == 'X';
}

/// True when every thread of `pid` has stopped (SIGSTOP). kill() returns before that: each
/// thread stops when it next handles the signal, and on a loaded machine one may run on for
/// milliseconds, long enough to act on what the test does next.
inline bool process_stopped(pid_t pid) {
    std::error_code ec;
    bool any = false;
    for (const auto& task : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
        const char state = proc_state((task.path() / "stat").string());
        if (state != 'T' && state != 't') return false;
        any = true;
    }
    return any;
}

}  // namespace fencelock::test_support
