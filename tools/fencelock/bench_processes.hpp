#pragma once
// bench --scenario hot --processes P: the contenders spread over P processes of this binary,
// each with a client of its own, as separate services would be. The parent starts them, holds
// them at a barrier until every one is connected, starts them together and merges what they
// measured (every wait sample, every contender's count), so percentiles and fairness cover
// all contenders, not an average of per-process figures.
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <expected>
#include <functional>
#include <iosfwd>
#include <string>
#include <system_error>
#include <vector>

#include "bench.hpp"

namespace fencelock::cli {

/// What contenders measured: one wait list (microseconds) per contender.
struct HotSample {
    std::vector<std::vector<std::int64_t>> wait_us;
    std::uint64_t unsuccessful = 0;  ///< attempts that did not get the lock
    std::uint64_t errors = 0;
    std::error_code first_error;
    double elapsed_s = 0;
};

/// A contender process that did not deliver: the exit code bench reports and why.
struct ChildFailure {
    int exit_code;
    std::string message;
};

/// The sample of contenders that ran since `started`: every contender's waits, unsuccessful
/// attempts and errors (a contender has wait_us, unsuccessful, errors and first_error), moved out.
template <typename Contender>
HotSample collect_sample(std::vector<Contender>& contenders, std::chrono::steady_clock::time_point started) {
    HotSample sample;
    sample.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    for (auto& c : contenders) {
        sample.wait_us.push_back(std::move(c.wait_us));
        sample.unsuccessful += c.unsuccessful;
        sample.errors += c.errors;
        if (!sample.first_error) sample.first_error = c.first_error;
    }
    return sample;
}

/// The hot scenario's JSON for `sample` (without the server's command count).
nlohmann::json hot_summary(const BenchArgs& a, const HotSample& sample);

/// In a contender process: tells the parent it is connected and waits for its start signal.
void await_start_signal();
/// In a contender process: the raw sample, one JSON line, for the parent to merge.
void write_child_sample(std::ostream& out, const HotSample& sample);

/// `a.clients` contenders on one AsyncLockClient driven from this thread (bench_async.cpp);
/// `ready` runs once the client exists, before the first contender starts.
HotSample run_async_contenders(const Globals& g, const BenchArgs& a, std::chrono::milliseconds duration,
                               const AcquireOptions& base, const ResourceName& resource,
                               const std::function<void()>& ready);

/// Runs `a.clients` contenders over `a.processes` processes and merges their samples.
std::expected<HotSample, ChildFailure> run_contender_processes(const Globals& g, const BenchArgs& a);

}  // namespace fencelock::cli
