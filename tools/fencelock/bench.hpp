#pragma once
// Pieces shared by the bench scenarios (cmd_bench.cpp: distinct and keeper; bench_hot.cpp).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cli.hpp"
#include "replica_flags.hpp"

namespace fencelock::cli {

struct BenchArgs {
    std::string scenario = "distinct";
    int clients = 1;
    int leases = 10000;
    std::string duration = "5s";
    std::string lease = "10s";
    bool fair = false;
    int connections = 1;
    ReplicaFlags replicas;
};

/// The value at quantile p (0..1) of a sorted sample; 0 for an empty one.
std::int64_t percentile(const std::vector<std::int64_t>& sorted, double p);

/// Commands the server has processed so far (INFO stats), to count commands per acquisition
/// from the server's side. nullopt when it cannot be read.
std::optional<std::int64_t> server_commands(const RedisTarget& target);

int run_hot_bench(const Globals& g, const BenchArgs& a, std::chrono::milliseconds duration,
                  const AcquireOptions& options);

}  // namespace fencelock::cli
