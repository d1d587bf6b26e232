#pragma once
// Whether a process has ended, as seen from a test that is not its parent. A killed process
// whose new parent has not reaped it yet is a zombie: kill(pid, 0) still succeeds, so the
// state letter in /proc/PID/stat decides (Z zombie, X dead).
#include <sys/types.h>

#include <fstream>
#include <string>

namespace fencelock::test_support {

/// True when `pid` no longer runs: no such process, or a zombie waiting to be reaped.
inline bool process_ended(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string stat;
    if (!std::getline(in, stat)) return true;
    // "PID (COMM) STATE ...": COMM may hold spaces and parentheses, so look after the last ')'.
    const auto paren = stat.rfind(')');
    if (paren == std::string::npos || paren + 2 >= stat.size()) return true;
    const char state = stat[paren + 2];
    return state == 'Z' || state == 'X';
}

}  // namespace fencelock::test_support
