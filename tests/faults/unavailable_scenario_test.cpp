// Redis unavailable: connections refused (proxy refuses), the connection cut with the request
// in flight, and the server killed. The library fails closed: every acquisition returns an
// error and nobody writes. Negative control: a worker that treats "Redis is down" as "go ahead
// anyway" (fail open) with an unfenced target: two such workers read, then both write, and
// one append is lost.
#include <barrier>
#include <thread>

#include "faults/fault_proxy.hpp"
#include "faults/scenario.hpp"

namespace fencelock::faults {
namespace {

using namespace std::chrono_literals;
using test_support::eventually;

using RedisUnavailable = ScenarioTest;

TEST_P(RedisUnavailable, AcquireFailsClosedAndNothingIsWritten) {
    FaultProxy proxy(redis->port());
    std::map<std::string, std::string> errors;
    int granted = 0;

    // Two workers per fault; each either gets the lock or (fail closed) writes nothing.
    auto run_fault = [&](const std::string& fault, const std::string& url, ClientOptions options,
                         AcquireOptions acquire, const std::function<void()>& after_send) {
        const std::string r = "down:" + fault;
        std::barrier both_read(2);
        std::vector<std::jthread> workers;
        std::mutex m;
        for (int i = 0; i < 2; ++i)
            workers.emplace_back([&, i] {
                auto c = client(options, url);
                auto rec = recorder(fault + "-" + std::to_string(i));
                RmwWorker w(*rec, *target);
                auto lease = record_acquire(*rec, r, [&] {
                    auto got = c.acquire(res(r), acquire);
                    std::lock_guard lock(m);
                    if (!got) errors[fault] = got.error().message();
                    return got;
                });
                if (lease) {
                    std::lock_guard lock(m);
                    ++granted;
                    return;
                }
                if (fencing()) return;  // fail closed: no lock, no write
                // Fail open: proceed without a lease (fence 0).
                const std::string base = w.read(r, 0);
                both_read.arrive_and_wait();
                w.write(r, base, fault + "-" + std::to_string(i), 0);
            });
        if (after_send) after_send();
        workers.clear();
    };

    proxy.refuse(true);
    run_fault("refused", proxy.url(), {.connect_timeout = 200ms}, {.lease = 5s, .wait = 300ms}, {});
    proxy.refuse(false);

    // Requests held in the proxy, then every connection cut: nothing reached Redis.
    proxy.hold_requests();
    run_fault("cut", proxy.url(), {.command_timeout = 2s}, {.lease = 5s}, [&] {
        ASSERT_TRUE(eventually([&] { return proxy.counters().held_up > 0 && proxy.counters().open >= 2; }));
        proxy.cut();
        proxy.pass();  // later requests (the acquire's best-effort release) go through
    });

    redis->kill();
    run_fault("killed", redis->url(), {.connect_timeout = 200ms}, {.lease = 5s, .wait = 300ms}, {});
    redis->start();

    EXPECT_EQ(granted, 0) << "an acquisition succeeded without Redis";
    const auto h = history();
    std::int64_t acquire_errors = 0;
    for (const auto& op : h.ops)
        if (op.kind == OpKind::acquire && op.outcome != Outcome::ok) ++acquire_errors;
    EXPECT_EQ(acquire_errors, 6);
    if (fencing()) {
        EXPECT_TRUE(h.accepted.empty()) << "something was written while Redis was unavailable";
    }
    const Report report = check_history();
    expect_verdict(report);
    expect_linearizability_caught();
    summary("redis_unavailable")
        .add("protection", "fail closed (no lease, no write)")
        .report(report)
        .linearizability(lin)
        .add("acquire_errors", acquire_errors)
        .add("acquired", granted)
        .add("writes_accepted", static_cast<std::int64_t>(h.accepted.size()))
        .add("error_refused", errors["refused"])
        .add("error_cut", errors["cut"])
        .add("error_killed", errors["killed"])
        .print();
}

INSTANTIATE_TEST_SUITE_P(Faults, RedisUnavailable, ::testing::ValuesIn(no_postgres()), mode_name);

}  // namespace
}  // namespace fencelock::faults
