#pragma once
// `fencelock demo --failover`: the same workload twice against a Sentinel-managed master and
// replica, once with fences from a plain INCR counter and once with fencelock's, failing over
// mid-run with lost writes. Reports how far the plain counter went back, where fencelock's
// clock-based fences continued, and what the store accepted.
#include <cstdint>
#include <string>

namespace fencelock::demo {

struct FailoverDemoArgs {
    std::uint64_t seed = 42;       ///< seeds the workers' think times (same in both runs)
    int workers = 4;               ///< worker processes, at least 3 (two are frozen)
    std::string duration = "12s";  ///< at least this long per run, failover included
    std::string lease = "400ms";
    std::string db;        ///< database URL; empty: a private SQLite file
    std::string timeline;  ///< HTML/SVG timeline file; empty: none
    bool json = false;
};

/// Runs both runs and prints the report; returns the exit code. Throws cli::InputError on
/// bad arguments.
int run_failover_demo(const FailoverDemoArgs& args);

}  // namespace fencelock::demo
