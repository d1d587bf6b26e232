#pragma once
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace fencelock::demo {

struct WorkerArgs {
    std::string redis_url;
    std::string db_url;
    std::string key_prefix;
    std::string history_path;
    std::vector<std::string> records;
    std::chrono::milliseconds lease{400};
    bool fenced = true;
    int worker = 0;
    int generation = 0;  ///< incremented each time the parent restarts a killed worker
    std::uint64_t seed = 1;
    std::int64_t until_ns = 0;  ///< CLOCK_MONOTONIC deadline
    int think_min_ms = 10, think_max_ms = 40;
    int gap_min_ms = 20, gap_max_ms = 60;
    /// The naive design the failover demo compares against: the lease still comes from
    /// fencelock, but the fence is an INCR of a key of its own (incr_fence_key()).
    bool incr_fences = false;
    /// Read without a claim (failover demo): the write's fence alone guards the record, so a
    /// fence that went backwards is what lets a stale write in.
    bool plain_reads = false;
    /// An armed freeze lands after the check-to-write gap, right before the write, so a worker
    /// thawed at a chosen moment writes at once (failover demo).
    bool freeze_at_write = false;
};

/// The key `incr_fences` workers INCR for `record`'s fences.
std::string incr_fence_key(const std::string& key_prefix, const std::string& record);

/// The command line that runs `args` in a `fencelock demo-worker` child (this executable).
std::vector<std::string> worker_command(const WorkerArgs& args);

/// The worker loop; returns the exit code.
int run_worker(const WorkerArgs& args);

}  // namespace fencelock::demo
