// Metrics and logs from a scripted lock scenario with known counts: the Prometheus text a
// scrape returns over HTTP, and JSON log lines that hide resource ids and passwords.
#include <nlohmann/json.hpp>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <atomic>
#include <mutex>
#include <thread>
#include <regex>

#include "fencelock/logging.hpp"
#include "fencelock/metrics.hpp"
#include "integration/lock_fixture.hpp"
#include "support/scrape.hpp"

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

    auto a = c.try_acquire(resource("order:1"), {.lease = 10s});     // acquired
    ASSERT_TRUE(a && a->acquired());
    ASSERT_TRUE(c.try_acquire(resource("order:1"), {.lease = 10s}));  // contended (order)
    ASSERT_TRUE(c.try_acquire(resource("order:1"), {.lease = 10s}));  // contended (order)
    ASSERT_TRUE(c.renew(resource("order:1"), a->lease->owner, 10s));  // renewed
    ASSERT_TRUE(c.release(resource("order:1"), OwnerToken::generate()));  // not_owner
    ASSERT_TRUE(c.release(resource("order:1"), a->lease->owner));     // released
    {
        auto held = c.hold(resource("invoice:9"), {.lease = 10s});    // acquired
        ASSERT_TRUE(held && held->acquired());
        ASSERT_TRUE(held->lease->release());                          // released, with hold time
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
        events.insert(j["event"].get<std::string>() + ":" + (j.contains("result") ? j["result"].get<std::string>() : j.value("reason", "")));
        EXPECT_EQ(j["resource_type"], "customer");
        EXPECT_EQ(j["resource_hash"], resource_hash("customer:alice@example.com"));
        EXPECT_EQ(line.find("alice@example.com"), std::string::npos) << line;
        EXPECT_EQ(line.find("wrong-pass-XYZ"), std::string::npos) << line;
    }
    for (const char* expected : {"lock_acquire:acquired", "lock_renew:renewed", "lock_renew:not_owner",
                                 "lock_lease_lost:not_owner", "lock_release:not_owner", "lock_acquire:error"})
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

}  // namespace
}  // namespace fencelock::test_support
