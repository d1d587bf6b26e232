// bench --scenario hot: N contenders take turns on a single resource, in one process sharing
// one client (threads), or spread over --processes P processes of their own (each a client).
// Measures handoffs per second, the wait for the lock, refused attempts per grant, commands
// the server ran per grant, and fairness between contenders.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <iostream>
#include <stop_token>
#include <thread>

#include "bench.hpp"
#include "bench_processes.hpp"

namespace fencelock::cli {
namespace {

using clock = std::chrono::steady_clock;

struct Contender {
    std::vector<std::int64_t> wait_us;
    std::uint64_t unsuccessful = 0;  // attempts that did not get the lock
    std::uint64_t errors = 0;
    std::error_code first_error;
};

const ResourceName& hot_resource() {
    static const auto resource = *ResourceName::make(std::string(bench_prefix) + "-hot");
    return resource;
}

// `a.clients` contender threads on one client; `ready` runs once the client exists, before the
// first contender starts (a child process waits there for the parent's start signal).
HotSample run_contenders(const Globals& g, const BenchArgs& a, std::chrono::milliseconds duration,
                         const AcquireOptions& base, const std::function<void()>& ready) {
    if (a.async) return run_async_contenders(g, a, duration, base, hot_resource(), ready);
    auto client = make_client(g, {}, static_cast<std::size_t>(a.connections));
    AcquireOptions options = base;
    options.wait = duration + std::chrono::seconds(10);  // every contender keeps waiting
    options.fair = a.fair;
    ready();

    std::vector<Contender> contenders(static_cast<std::size_t>(a.clients));
    std::stop_source stop;
    std::vector<std::jthread> threads;
    const auto started = clock::now();
    // One turn: take the lock (acquire(), or hold() with --keep), count it, release it.
    const auto turn = [&](Contender& c, const auto& got, const auto& release) {
        if (!got || !got->acquired()) {
            if (!got && !c.first_error) c.first_error = got.error();
            if (!got) ++c.errors;
            return;
        }
        c.unsuccessful += got->unsuccessful_attempts;
        auto released = release();
        if (!released || *released != ReleaseStatus::released) ++c.errors;
    };
    for (auto& c : contenders) {
        threads.emplace_back([&] {
            while (!stop.stop_requested()) {
                const auto t0 = clock::now();
                const auto waited = [&] {
                    c.wait_us.push_back(
                        std::chrono::duration_cast<std::chrono::microseconds>(clock::now() - t0).count());
                };
                if (a.keep) {
                    auto got = client.hold(hot_resource(), options, KeepOptions{}, stop.get_token());
                    if (got && got->acquired()) waited();
                    turn(c, got, [&] { return got->lease->release(); });
                } else {
                    auto got = client.acquire(hot_resource(), options, stop.get_token());
                    if (got && got->acquired()) waited();
                    turn(c, got, [&] { return client.release(hot_resource(), got->lease->owner); });
                }
            }
        });
    }
    std::this_thread::sleep_for(duration);  // the measurement window itself
    stop.request_stop();
    threads.clear();

    return collect_sample(contenders, started);
}

}  // namespace

nlohmann::json hot_summary(const BenchArgs& a, const HotSample& sample) {
    std::vector<std::int64_t> waits;
    std::size_t most = 0, fewest = SIZE_MAX;
    for (const auto& w : sample.wait_us) {
        waits.insert(waits.end(), w.begin(), w.end());
        most = std::max(most, w.size());
        fewest = std::min(fewest, w.size());
    }
    std::sort(waits.begin(), waits.end());
    const auto grants = static_cast<double>(waits.size());
    const double unsuccessful = static_cast<double>(sample.unsuccessful);
    nlohmann::json out{{"scenario", "hot"},
                       {"clients", a.clients},
                       {"processes", a.processes},
                       {"fair", a.fair},
                       {"keep", a.keep},
                       {"duration_s", sample.elapsed_s},
                       {"acquisitions", waits.size()},
                       {"handoffs_per_sec", grants / sample.elapsed_s},
                       {"wait_p50_us", percentile(waits, 0.50)},
                       {"wait_p99_us", percentile(waits, 0.99)},
                       {"wait_max_us", waits.empty() ? 0 : waits.back()},
                       {"failed_attempts_per_success", grants > 0 ? unsuccessful / grants : 0.0},
                       // A contender that never got the lock makes the ratio infinite: null.
                       {"fairness", fewest > 0 ? nlohmann::json(static_cast<double>(most) / static_cast<double>(fewest))
                                               : nlohmann::json(nullptr)},
                       {"errors", sample.errors}};
    if (a.async) out["api"] = "async";  // as the distinct scenario marks it
    return out;
}

int run_hot_bench(const Globals& g, const BenchArgs& a, std::chrono::milliseconds duration,
                  const AcquireOptions& base) {
    if (a.as_child) {
        // A contender process of `--processes`: the parent counts and cleans up.
        HotSample sample = run_contenders(g, a, duration, base, await_start_signal);
        if (sample.wait_us.empty() && sample.first_error) return redis_failure(sample.first_error);
        write_child_sample(std::cout, sample);
        return exit_ok;
    }
    const RedisTarget target = redis_target(g);
    ServerCommandCounter server(target);
    const auto commands_before = server.read();
    std::expected<HotSample, ChildFailure> sample = a.processes > 1 ? run_contender_processes(g, a)
                                                                    : run_contenders(g, a, duration, base, [] {});
    if (!sample) return fail(sample.error().exit_code, "bench", sample.error().message);
    const auto commands_after = server.read();
    const bool granted = std::ranges::any_of(sample->wait_us, [](const auto& w) { return !w.empty(); });
    if (!granted && sample->first_error) return redis_failure(sample->first_error);

    nlohmann::json out = hot_summary(a, *sample);
    const double grants = out["acquisitions"].get<double>();
    if (commands_before && commands_after && grants > 0)
        out["commands_per_acquisition"] = static_cast<double>(*commands_after - *commands_before) / grants;
    emit(out);
    return exit_ok;
}

}  // namespace fencelock::cli
