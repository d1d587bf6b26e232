#pragma once
// Every process of a command's tree, wherever it moved: the processes whose environment holds
// the tree's tag (FENCELOCK_TREE=<tag>, set in CMD's environment at spawn and inherited by
// every descendant through fork and exec). A process group is not enough: GNU timeout and
// `set -m` move their children to groups of their own, and a double fork's orphan is no longer
// anyone's descendant, but all of them keep the environment they were started with.
//
// Only system calls and stack buffers: the group guard calls kill_tree() in a forked copy of a
// multi-threaded fencelock, where malloc and stdio are off limits.
//
// Limits: a process that starts with a cleared environment (env -i, a daemon that scrubs it) or
// whose /proc/PID/environ fencelock may not read (another user, a setuid program) escapes, as a
// process that calls setsid() escaped the group kill; both are documented in the README.
#include <sys/types.h>

#include <cstddef>
#include <string_view>

namespace fencelock::cli {

/// The variable that tags a tree: FENCELOCK_TREE.
inline constexpr std::string_view tree_variable = "FENCELOCK_TREE";

/// Sends `sig` to every process (but the caller) whose environment has the entry `marker`
/// ("FENCELOCK_TREE=<tag>"). SIGKILL is sent in passes until one finds nobody (at most 16), so
/// a process forked during a pass is caught by the next. Returns how many signals were sent.
std::size_t kill_tree(std::string_view marker, int sig) noexcept;

/// Whether process `pid`'s environment has the entry `marker` (false when unreadable or gone).
bool tagged(pid_t pid, std::string_view marker) noexcept;

}  // namespace fencelock::cli
