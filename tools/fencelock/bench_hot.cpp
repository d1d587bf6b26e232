// bench --scenario hot: N contenders in one process, sharing one client, take turns on a
// single resource. Measures handoffs per second, the wait for the lock, refused attempts per
// grant, commands the server ran per grant, and fairness between contenders.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <stop_token>
#include <thread>

#include "bench.hpp"

namespace fencelock::cli {
namespace {

using clock = std::chrono::steady_clock;

struct Contender {
    std::vector<std::int64_t> wait_us;
    std::uint64_t attempts = 0;
    std::uint64_t errors = 0;
    std::error_code first_error;
};

}  // namespace

int run_hot_bench(const Globals& g, const BenchArgs& a, std::chrono::milliseconds duration,
                  const AcquireOptions& base) {
    auto client = make_client(g, {}, static_cast<std::size_t>(a.connections));
    const auto resource = *ResourceName::make(std::string(bench_prefix) + "-hot");
    AcquireOptions options = base;
    options.wait = duration + std::chrono::seconds(10);  // every contender keeps waiting
    options.fair = a.fair;
    const RedisTarget target = redis_target(g);
    ServerCommandCounter server(target);
    const auto commands_before = server.read();

    std::vector<Contender> contenders(static_cast<std::size_t>(a.clients));
    std::stop_source stop;
    std::vector<std::jthread> threads;
    const auto started = clock::now();
    for (auto& c : contenders) {
        threads.emplace_back([&] {
            while (!stop.stop_requested()) {
                const auto t0 = clock::now();
                auto got = client.acquire(resource, options, stop.get_token());
                if (!got || !got->acquired()) {
                    if (!got && !c.first_error) c.first_error = got.error();
                    if (!got) ++c.errors;
                    continue;
                }
                c.wait_us.push_back(std::chrono::duration_cast<std::chrono::microseconds>(clock::now() - t0).count());
                c.attempts += got->attempts;
                auto released = client.release(resource, got->lease->owner);
                if (!released || *released != ReleaseStatus::released) ++c.errors;
            }
        });
    }
    std::this_thread::sleep_for(duration);  // the measurement window itself
    stop.request_stop();
    threads.clear();
    const double elapsed = std::chrono::duration<double>(clock::now() - started).count();
    const auto commands_after = server.read();

    std::vector<std::int64_t> waits;
    std::uint64_t attempts = 0, errors = 0;
    std::size_t most = 0, fewest = SIZE_MAX;
    std::error_code first_error;
    for (const auto& c : contenders) {
        waits.insert(waits.end(), c.wait_us.begin(), c.wait_us.end());
        attempts += c.attempts;
        errors += c.errors;
        most = std::max(most, c.wait_us.size());
        fewest = std::min(fewest, c.wait_us.size());
        if (!first_error) first_error = c.first_error;
    }
    if (waits.empty() && first_error) return redis_failure(first_error);
    std::sort(waits.begin(), waits.end());
    const auto grants = static_cast<double>(waits.size());
    nlohmann::json out{{"scenario", "hot"},
                       {"clients", a.clients},
                       {"fair", a.fair},
                       {"duration_s", elapsed},
                       {"acquisitions", waits.size()},
                       {"handoffs_per_sec", grants / elapsed},
                       {"wait_p50_us", percentile(waits, 0.50)},
                       {"wait_p99_us", percentile(waits, 0.99)},
                       {"wait_max_us", waits.empty() ? 0 : waits.back()},
                       {"failed_attempts_per_success", grants > 0 ? (static_cast<double>(attempts) - grants) / grants : 0.0},
                       // A contender that never got the lock makes the ratio infinite: null.
                       {"fairness", fewest > 0 ? nlohmann::json(static_cast<double>(most) / static_cast<double>(fewest))
                                               : nlohmann::json(nullptr)},
                       {"errors", errors}};
    if (commands_before && commands_after && grants > 0)
        out["commands_per_acquisition"] = static_cast<double>(*commands_after - *commands_before) / grants;
    emit(out);
    return exit_ok;
}

}  // namespace fencelock::cli
