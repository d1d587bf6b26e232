#pragma once
// What both demo runners (the fault schedule and the failover) need from the system: one clock
// shared with the workers, the path of this binary to spawn them, a way to catch a worker at
// its armed freeze, a private directory, and the merge of the workers' history files.
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "demo/events.hpp"

namespace fencelock::demo {

/// CLOCK_MONOTONIC in nanoseconds: the parent and the workers stamp history with it.
std::int64_t monotonic_ns();

/// This executable, to spawn `demo-worker` children ("fencelock" if /proc is unreadable).
std::string self_exe();

/// A worker armed with SIGUSR1 stops itself at its next write; waits for that, bounded.
bool wait_until_stopped(pid_t pid, std::chrono::milliseconds limit = std::chrono::seconds(2));

/// A fresh /tmp/fencelock-demo-XXXXXX, removed with everything in it when this dies.
class ScratchDir {
public:
    ScratchDir();
    ~ScratchDir();
    ScratchDir(const ScratchDir&) = delete;
    ScratchDir& operator=(const ScratchDir&) = delete;
    const std::filesystem::path& path() const { return path_; }

private:
    std::filesystem::path path_;
};

/// Merges the JSON lines of every file into one history (unreadable files add nothing).
History read_history_files(const std::vector<std::filesystem::path>& files);

}  // namespace fencelock::demo
