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
};

/// The worker loop; returns the exit code.
int run_worker(const WorkerArgs& args);

}  // namespace fencelock::demo
