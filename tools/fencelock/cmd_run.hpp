#pragma once
// `fencelock run`: its arguments, parsed by register_run_command (cmd_run_flags.cpp), and the
// command itself (cmd_run.cpp).
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "cli.hpp"
#include "observe.hpp"
#include "replica_flags.hpp"

namespace fencelock::cli {

inline constexpr int exit_not_acquired = 75;
inline constexpr int exit_lease_lost = 76;

inline constexpr const char* default_lease = "30s";

struct RunArgs {
    std::string resource, lease = default_lease, wait, max_hold, grace, report;
    bool nonblock = false, json = false;
    int conflict_exit_code = exit_not_acquired;
    ReplicaFlags replicas;
    std::vector<std::string> command;
    ObserveArgs observe;
};

/// Runs CMD under the lease of RESOURCE; returns run's exit code (see cmd_run.cpp).
int run_run(const Globals& g, const RunArgs& a, const CLI::App& cmd);

}  // namespace fencelock::cli
