// Metrics and logs from a scripted lock scenario with known counts: the Prometheus text a
// scrape returns over HTTP, and JSON log lines that hide resource ids and passwords.
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <mutex>
#include <regex>
#include <thread>

#include "fencelock/logging.hpp"
#include "fencelock/metrics.hpp"
#include "integration/lock_fixture.hpp"
#include "support/scrape.hpp"
#ifdef FENCELOCK_CLI
#include "integration/cli/run_fixture.hpp"
#endif

namespace fencelock::test_support {
namespace {

using namespace std::chrono_literals;

TEST_F(LockTest, PrometheusMetricsCountAScriptedScenarioAndServeThemOverHttp) {
    auto registry = std::make_shared<prometheus::Registry>();
    auto metrics = std::make_shared<PrometheusMetrics>(*registry);
    MetricsServer server("127.0.0.1:0", registry);
    ClientOptions options;
    options.observer = metrics;
    auto c = client(options);

    auto a = c.try_acquire(resource("order:1"), {.lease = 10s});  // acquired
    ASSERT_TRUE(a && a->acquired());
    ASSERT_TRUE(c.try_acquire(resource("order:1"), {.lease = 10s}));      // contended (order)
    ASSERT_TRUE(c.try_acquire(resource("order:1"), {.lease = 10s}));      // contended (order)
    ASSERT_TRUE(c.renew(resource("order:1"), a->lease->owner, 10s));      // renewed
    ASSERT_TRUE(c.release(resource("order:1"), OwnerToken::generate()));  // not_owner
    ASSERT_TRUE(c.release(resource("order:1"), a->lease->owner));         // released
    {
        auto held = c.hold(resource("invoice:9"), {.lease = 10s});  // acquired
        ASSERT_TRUE(held && held->acquired());
        ASSERT_TRUE(held->lease->release());  // released, with hold time
    }
    metrics->fence_rejected("order:1");
    metrics->job_retry("contention");
    metrics->job_retry("business");
    metrics->job_duplicate();

    const std::string text = "\n" + http_get(server.port(), "/metrics");
    EXPECT_EQ(sample(text, "fencelock_lock_acquire_total{result=\"acquired\"}"), 2);
    EXPECT_EQ(sample(text, "fencelock_lock_acquire_total{result=\"contended\"}"), 2);
    EXPECT_EQ(sample(text, "fencelock_lock_acquire_total{result=\"error\"}"), 0);
    EXPECT_EQ(sample(text, "fencelock_lock_contention_total{resource_type=\"order\"}"), 2);
    EXPECT_EQ(sample(text, "fencelock_lock_renew_total{result=\"renewed\"}"), 1);
    EXPECT_EQ(sample(text, "fencelock_lock_release_total{result=\"released\"}"), 2);
    EXPECT_EQ(sample(text, "fencelock_lock_release_total{result=\"not_owner\"}"), 1);
    EXPECT_EQ(sample(text, "fencelock_lock_hold_duration_seconds_count"), 1);
    EXPECT_EQ(sample(text, "fencelock_lock_acquire_duration_seconds_count"), 4);
    EXPECT_EQ(sample(text, "fencelock_lock_lease_lost_total{reason=\"expired\"}"), 0);
    EXPECT_EQ(sample(text, "fencelock_fence_rejected_total"), 1);
    EXPECT_EQ(sample(text, "fencelock_job_retry_total{reason=\"contention\"}"), 1);
    EXPECT_EQ(sample(text, "fencelock_job_retry_total{reason=\"infrastructure\"}"), 0);
    EXPECT_EQ(sample(text, "fencelock_job_duplicate_total"), 1);
    EXPECT_EQ(text.find("order:1"), std::string::npos) << "resource ids must never become labels";
}

// Contention counts attempts, not outcomes: an acquisition that waited for a holder and then
// got the lock was contended (it once counted nothing: the contention panel and alert stayed
// empty for `run` users).
TEST_F(LockTest, WaitingAcquisitionThatSucceedsCountsItsContendedAttempts) {
    auto registry = std::make_shared<prometheus::Registry>();
    auto metrics = std::make_shared<PrometheusMetrics>(*registry, MetricsOptions{.resource_types = {"invoice"}});
    ClientOptions options;
    options.observer = metrics;
    auto c = client(options);
    auto holder = client();
    auto held = holder.try_acquire(resource("order:5"), {.lease = 30s});
    ASSERT_TRUE(held && held->acquired());
    std::thread waiter([&] {
        auto got = c.acquire(resource("order:5"), {.lease = 10s, .wait = 30s});
        EXPECT_TRUE(got && got->acquired());
    });
    // The waiter's refused attempt left it among the sleepers: it has been contended.
    ASSERT_TRUE(eventually([&] { return redis->cli({"ZCARD", "sleepers:{order:5}"}) == "1"; }, 10s));
    ASSERT_TRUE(holder.release(resource("order:5"), held->lease->owner));
    waiter.join();
    const std::string text = "\n" + prometheus::TextSerializer().Serialize(registry->Collect());
    EXPECT_EQ(sample(text, "fencelock_lock_acquire_total{result=\"acquired\"}"), 1);
    EXPECT_EQ(sample(text, "fencelock_lock_acquire_total{result=\"contended\"}"), 0);
    EXPECT_GE(sample(text, "fencelock_lock_contention_total{resource_type=\"order\"}"), 1);
    EXPECT_EQ(sample(text, "fencelock_lock_contention_total{resource_type=\"invoice\"}"), 0)
        << "a type named in advance is exported at zero";
    EXPECT_EQ(sample(text, "fencelock_redis_errors_total{source=\"client\"}"), 0);
}

// Every failed Redis call of the client and the keeper is counted, each retried attempt too.
TEST_F(LockTest, EveryRedisErrorOfClientAndKeeperIsCounted) {
    auto registry = std::make_shared<prometheus::Registry>();
    auto metrics = std::make_shared<PrometheusMetrics>(*registry);
    struct FailedAttempts final : LockObserver {
        std::atomic<unsigned> n{0};
        void on_acquire(const AcquireEvent& e) noexcept override { n += e.failed_attempts; }
    };
    auto failed = std::make_shared<FailedAttempts>();
    ClientOptions options{.command_timeout = 200ms};
    options.observer = std::make_shared<ObserverChain>(std::vector<std::shared_ptr<LockObserver>>{metrics, failed});
    auto c = client(options);
    auto held = c.hold(resource("order:6"), {.lease = 600ms});
    ASSERT_TRUE(held && held->acquired());
    redis->kill();
    ASSERT_TRUE(eventually([&] { return held->lease->loss().has_value(); }, 10s));
    EXPECT_FALSE(c.acquire(resource("order:7"), {.lease = 1s, .wait = 300ms}));
    const std::string text = "\n" + prometheus::TextSerializer().Serialize(registry->Collect());
    EXPECT_GE(failed->n.load(), 2u) << "a wait of 300 ms retries";
    EXPECT_EQ(sample(text, "fencelock_redis_errors_total{source=\"client\"}"), failed->n.load());
    EXPECT_GE(sample(text, "fencelock_redis_errors_total{source=\"keeper\"}"), 1);
    EXPECT_EQ(sample(text, "fencelock_lock_acquire_total{result=\"error\"}"), 1);
}

struct CapturedLog {
    std::mutex m;
    std::vector<std::string> lines;
    LogOptions options(LogLevel level, bool raw) {
        return {.level = level, .raw_resource_ids = raw, .sink = [this](std::string_view l) {
                    std::lock_guard lock(m);
                    lines.emplace_back(l);
                }};
    }
};

TEST_F(LockTest, JsonLogsParseAndHideResourceIdsAndPasswords) {
    CapturedLog captured;
    ClientOptions options;
    options.observer = std::make_shared<JsonLogObserver>(captured.options(LogLevel::debug, false));
    auto c = client(options);
    const auto r = resource("customer:alice@example.com");
    {
        // Long enough that a loaded machine's stall does not lose it before its first renewal.
        auto held = c.hold(r, {.lease = 1s});
        ASSERT_TRUE(held && held->acquired());
        ASSERT_TRUE(eventually([&] { return held->lease->renewals() >= 1; }));
        redis->cli({"DEL", "lock:{customer:alice@example.com}"});
        ASSERT_TRUE(eventually([&] { return held->lease->loss().has_value(); }));
    }
    // A client with a wrong password logs its failure without the password.
    redis->cli({"CONFIG", "SET", "requirepass", "right-one"});
    auto ep = *parse_redis_url(redis->url());
    ep.password = "wrong-pass-XYZ";
    ClientOptions bad{.endpoint = ep};
    bad.observer = options.observer;
    auto failing = LockClient::create(bad);
    ASSERT_FALSE(failing->try_acquire(r, {.lease = 1s}));

    std::set<std::string> events;
    for (const auto& line : captured.lines) {
        auto j = nlohmann::json::parse(line, nullptr, false);
        ASSERT_TRUE(j.is_object()) << line;
        events.insert(j["event"].get<std::string>() + ":" +
                      (j.contains("result") ? j["result"].get<std::string>() : j.value("reason", "")));
        EXPECT_EQ(j["resource_type"], "customer");
        EXPECT_EQ(j["resource_hash"], resource_hash("customer:alice@example.com"));
        EXPECT_EQ(line.find("alice@example.com"), std::string::npos) << line;
        EXPECT_EQ(line.find("wrong-pass-XYZ"), std::string::npos) << line;
    }
    for (const char* expected : {"lock_acquire:acquired", "lock_renew:renewed", "lock_renew:not_owner",
                                 "lock_lease_lost:not_owner", "lock_release:not_held", "lock_acquire:error"})
        EXPECT_TRUE(events.count(expected)) << expected;
}

TEST_F(LockTest, LogLevelFiltersAndRawIdsAreOptIn) {
    CapturedLog captured;
    ClientOptions options;
    options.observer = std::make_shared<JsonLogObserver>(captured.options(LogLevel::warn, true));
    auto c = client(options);
    auto a = c.try_acquire(resource("order:7"), {.lease = 10s});  // info: dropped
    ASSERT_TRUE(a && a->acquired());
    ASSERT_TRUE(c.release(resource("order:7"), OwnerToken::generate()));  // warn: kept
    ASSERT_EQ(captured.lines.size(), 1u);
    auto j = nlohmann::json::parse(captured.lines[0]);
    EXPECT_EQ(j["event"], "lock_release");
    EXPECT_EQ(j["resource"], "order:7");
    EXPECT_FALSE(j.contains("resource_hash"));
    EXPECT_EQ(parse_log_level("warn"), LogLevel::warn);
    EXPECT_EQ(parse_log_level("loud"), std::nullopt);
}

// A kept lease while Redis is gone: the keeper retries its renewal about every 100 ms, the
// metrics count each failure, the log says it once.
TEST_F(LockTest, FailedKeptRenewalsAreLoggedOnceAndCountedEachTime) {
    CapturedLog captured;
    auto registry = std::make_shared<prometheus::Registry>();
    auto metrics = std::make_shared<PrometheusMetrics>(*registry);
    ClientOptions options{.command_timeout = 200ms};
    options.observer = std::make_shared<ObserverChain>(std::vector<std::shared_ptr<LockObserver>>{
        metrics, std::make_shared<JsonLogObserver>(captured.options(LogLevel::warn, false))});
    auto c = client(options);
    auto held = c.hold(resource("order:8"), {.lease = 3s});
    ASSERT_TRUE(held && held->acquired());
    redis->kill();
    const auto keeper_errors = [&] {
        const std::string text = "\n" + prometheus::TextSerializer().Serialize(registry->Collect());
        return sample(text, "fencelock_redis_errors_total{source=\"keeper\"}");
    };
    ASSERT_TRUE(eventually([&] { return keeper_errors() >= 4; }, 10s)) << "the keeper retries";
    std::lock_guard lock(captured.m);
    std::vector<std::string> failures;
    for (const auto& line : captured.lines) {
        const auto j = nlohmann::json::parse(line);
        if (j["event"] == "lock_renew" && j["result"] == "error") failures.push_back(line);
    }
    ASSERT_GE(failures.size(), 1u);
    // One per kind of failure: a refused connection and a timeout may both show, not each retry.
    EXPECT_LE(failures.size(), 2u) << failures.back();
    EXPECT_LT(failures.size(), static_cast<std::size_t>(keeper_errors()));
}

// /healthz answers while the process runs; /readyz follows the last Redis round trip: 200
// while Redis answers, 503 with the reason once a call failed, 200 again after one succeeds.
TEST_F(LockTest, ReadinessFollowsRedisAndLivenessDoesNot) {
    auto registry = std::make_shared<prometheus::Registry>();
    auto metrics = std::make_shared<PrometheusMetrics>(*registry);
    MetricsServer server("127.0.0.1:0", registry);
    server.ready_when([metrics] { return metrics->redis_readiness(); });
    ClientOptions options{.command_timeout = 200ms};
    options.observer = metrics;
    auto c = client(options);
    const auto get = [&](const char* path) { return http_get(server.port(), path); };

    ASSERT_TRUE(c.try_acquire(resource("order:1"), {.lease = 10s}));
    EXPECT_TRUE(get("/readyz").starts_with("HTTP/1.1 200 OK")) << get("/readyz");
    EXPECT_TRUE(get("/healthz").starts_with("HTTP/1.1 200 OK"));
    EXPECT_TRUE(get("/healthz").ends_with("\r\n\r\nok\n"));

    redis->kill();
    EXPECT_FALSE(c.try_acquire(resource("order:2"), {.lease = 10s}));
    const std::string down = get("/readyz");
    EXPECT_TRUE(down.starts_with("HTTP/1.1 503")) << down;
    EXPECT_NE(down.find("redis unavailable (client)"), std::string::npos) << down;
    EXPECT_TRUE(get("/healthz").starts_with("HTTP/1.1 200 OK")) << "alive, only not ready";
    EXPECT_GE(sample("\n" + get("/metrics"), "fencelock_redis_errors_total{source=\"client\"}"), 1)
        << "/metrics is still served";

    redis->start();
    ASSERT_TRUE(eventually([&] { return c.try_acquire(resource("order:2"), {.lease = 10s}).has_value(); }, 10s));
    EXPECT_TRUE(get("/readyz").starts_with("HTTP/1.1 200 OK")) << get("/readyz");
}

// A not-ready answer runs the scrape samplers once and asks again: a sampler that reaches
// Redis (a worker's queue depth) turns an idle worker ready without waiting for a job.
TEST_F(LockTest, ReadinessIsRecheckedAfterTheScrapeSamplersRan) {
    auto registry = std::make_shared<prometheus::Registry>();
    auto metrics = std::make_shared<PrometheusMetrics>(*registry);
    MetricsServer server("127.0.0.1:0", registry);
    server.ready_when([metrics] { return metrics->redis_readiness(); });
    std::atomic<bool> redis_back{false};
    std::atomic<int> samples{0};
    server.on_scrape([&] {
        ++samples;
        if (redis_back) metrics->redis_answered("worker");
    });
    metrics->redis_error("worker");
    EXPECT_TRUE(http_get(server.port(), "/readyz").starts_with("HTTP/1.1 503"));
    EXPECT_EQ(samples.load(), 1);
    redis_back = true;
    EXPECT_TRUE(http_get(server.port(), "/readyz").starts_with("HTTP/1.1 200 OK"));
    EXPECT_EQ(samples.load(), 2);
    EXPECT_TRUE(http_get(server.port(), "/readyz").starts_with("HTTP/1.1 200 OK"));
    EXPECT_EQ(samples.load(), 2) << "a ready answer costs no sample";
}

#ifdef FENCELOCK_CLI
// `fencelock run --metrics-addr`: a lock-only process exports no job_* series, answers
// /healthz, and /readyz turns 503 once its keeper cannot renew against a stopped Redis.
TEST_F(RunTest, RunServesNoJobSeriesAndReadinessFollowsRedis) {
    const auto port = static_cast<unsigned short>(local::free_port());
    // A 10 s lease: after Redis stops, its renewals fail for seconds before it is lost and run
    // stops CMD and exits, time enough to read /readyz and /healthz.
    const pid_t run = start(run_args("ready", {"--lease", "10s", "--metrics-addr", "127.0.0.1:" + std::to_string(port)},
                                     std::string(announce) + "exec sleep 600"));
    ASSERT_GT(wait_started(), 0);
    std::string text;
    ASSERT_TRUE(eventually([&] {
        text = "\n" + http_get(port, "/metrics");
        return sample(text, "fencelock_lock_acquire_total{result=\"acquired\"}") == 1;
    }));
    EXPECT_NE(text.find("# TYPE fencelock_lock_renew_total counter"), std::string::npos);
    EXPECT_EQ(text.find("fencelock_job_"), std::string::npos) << text;
    EXPECT_EQ(text.find("source=\"worker\""), std::string::npos) << text;
    EXPECT_TRUE(http_get(port, "/readyz").starts_with("HTTP/1.1 200 OK"));
    EXPECT_TRUE(http_get(port, "/healthz").starts_with("HTTP/1.1 200 OK"));

    redis->kill();
    std::string readyz;
    ASSERT_TRUE(eventually(
        [&] {
            readyz = http_get(port, "/readyz");
            return readyz.starts_with("HTTP/1.1 503");
        },
        20s))
        << readyz;
    EXPECT_NE(readyz.find("redis unavailable (keeper)"), std::string::npos) << readyz;
    EXPECT_TRUE(http_get(port, "/healthz").starts_with("HTTP/1.1 200 OK")) << "alive, only not ready";
    EXPECT_EQ(wait_exit(run), 76) << "renewals failed until the lease's end: CMD stopped";
}
#endif

}  // namespace
}  // namespace fencelock::test_support
