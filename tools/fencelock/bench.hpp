#pragma once
// Pieces shared by the bench scenarios (cmd_bench.cpp: distinct and keeper; bench_hot.cpp).
#include <cstdint>
#include <expected>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "cli.hpp"
#include "replica_flags.hpp"

namespace fencelock::detail {
class Connection;
}

namespace fencelock::cli {

struct BenchArgs {
    std::string scenario = "distinct";
    int clients = 1;
    int leases = 10000;
    std::string duration = "5s";
    std::string lease = "10s";
    bool fair = false;
    /// hot: contenders take the lock with hold() and release the HeldLease (a kept lease takes
    /// a release's direct grant; a plain acquire() is woken and tries again).
    bool keep = false;
    int connections = 1;
    /// hot: processes the contenders are spread over (1: threads of this process only).
    int processes = 1;
    /// hot: this is one of those processes (hidden): wait for the start, print the raw sample.
    bool as_child = false;
    bool async = false;  ///< distinct, hot: the lockers run on AsyncLockClient, driven from one thread
    int runners = 4;     ///< --async: AsyncOptions::runners
    ReplicaFlags replicas;
};

/// The value at quantile p (0..1) of a sorted sample; 0 for an empty one.
std::int64_t percentile(const std::vector<std::int64_t>& sorted, double p);

/// Commands the server has processed (INFO stats; summed over every master of a cluster), to
/// count commands per acquisition from the server's side. Its own INFO calls are not counted,
/// so the difference of two reads is what others sent in between.
class ServerCommandCounter {
public:
    explicit ServerCommandCounter(const RedisTarget& target);
    ~ServerCommandCounter();
    /// nullopt when a server cannot be read.
    std::optional<std::int64_t> read();

private:
    std::unique_ptr<detail::Connection> connection_;
    std::int64_t own_ = 0;  ///< INFO calls sent so far
};

/// Every bench resource's name starts with this: its keys are bench's alone.
inline constexpr std::string_view bench_prefix = "fencelock-bench";

/// Deletes every key of a bench resource (SCAN + UNLINK); how many. bench calls it before and
/// after a run, so an interrupted run leaves nothing behind once the next one starts.
std::expected<std::size_t, std::error_code> remove_bench_keys(const RedisTarget& target);

/// One locker's figures in the distinct scenario.
struct LockerStats {
    std::vector<std::int64_t> cycle_us;
    std::uint64_t errors = 0;
    std::error_code first_error;
};

/// Sums the lockers' figures and prints the distinct scenario's report, `extra` merged in
/// (bench_async.cpp; the threads and the async variant share it).
int report_distinct(const std::vector<LockerStats>& lockers, double elapsed_s, const BenchArgs& a,
                    const AcquireOptions& options, const nlohmann::json& extra);

/// distinct --async (tools/fencelock/bench_async.cpp).
int run_async_distinct_bench(const Globals& g, const BenchArgs& a, std::chrono::milliseconds duration,
                             const AcquireOptions& options);

int run_hot_bench(const Globals& g, const BenchArgs& a, std::chrono::milliseconds duration,
                  const AcquireOptions& options);

}  // namespace fencelock::cli
