// QueueMetricsObserver, the library's adapter from job decisions to Prometheus metrics and
// JSON logs, in a running worker, with the same metrics as the store's observer: a job whose
// fence the store refuses moves the metrics (real Redis and store). The adapter fed by hand is a unit test
// (tests/unit/queue_metrics_observer_test.cpp).
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <mutex>

#include "fencelock/queue_metrics.hpp"
#include "queue_fixture.hpp"
#include "support/scrape.hpp"

namespace fencelock::test_support {
namespace {

using std::chrono::milliseconds;
using namespace std::chrono_literals;

std::string scrape(prometheus::Registry& registry) {
    return "\n" + prometheus::TextSerializer().Serialize(registry.Collect());
}

// A newer holder already reached the store (its fence is far above any Redis hands out): every
// attempt of the job is refused as stale, nothing is written, and the worker's metrics say so.
TEST_P(QueueTest, FenceRejectedJobMovesTheQueueMetrics) {
    auto registry = std::make_shared<prometheus::Registry>();
    auto metrics = std::make_shared<PrometheusMetrics>(*registry);
    std::mutex m;
    std::vector<std::string> lines;
    auto log = std::make_shared<JsonLogObserver>(
        LogOptions{.level = LogLevel::info, .raw_resource_ids = false, .sink = [&](std::string_view l) {
                       std::lock_guard lock(m);
                       lines.emplace_back(l);
                   }});
    // The store counts its refusals itself: the library's FencedStore, not the worker.
    auto options_with_metrics = store->options();
    options_with_metrics.observer = metrics;
    auto observed = FencedStore::create(options_with_metrics).value();
    const auto stale = ResourceName::make("order:stale").value();
    ASSERT_TRUE(store->create_resource(stale));
    auto newer = store->write(stale, FencingToken(max_fence - 1), "newer holder");
    ASSERT_TRUE(newer) << newer.error().detail;
    const auto rejected = enqueue("order:stale", "k-stale");
    const auto fine = enqueue("order:fine", "k-fine");

    auto locks = client(metrics);
    WorkerOptions options{.concurrency = 1,
                          .processing = {.lease = milliseconds(5000), .retry = fast_policies()},
                          .visibility_timeout = milliseconds(30'000),
                          .block = milliseconds(100),
                          .promote_every = milliseconds(20),
                          .shutdown_grace = milliseconds(5000)};
    options.processing.observer = std::make_shared<QueueMetricsObserver>(metrics, log);
    BackgroundWorker w(QueueWorker::create(queue_options(), options, locks, observed).value(),
                       [](const JobContext& ctx, Transaction& tx) { return insert_effect(ctx, tx); });
    ASSERT_TRUE(eventually(
        [&] {
            return sample(scrape(*registry), "fencelock_fence_rejected_total") >= 2 &&
                   stats().counter("completed") == 1;
        },
        30s))
        << describe(stats());
    const auto ws = w.stop();

    const std::string text = scrape(*registry);
    const double refusals = sample(text, "fencelock_fence_rejected_total");
    EXPECT_GE(refusals, 2);
    EXPECT_EQ(refusals, static_cast<double>(ws.lease_lost)) << "every lost lease here was a refused fence";
    EXPECT_EQ(sample(text, "fencelock_job_aborted_total{reason=\"lease_lost\"}"), refusals);
    EXPECT_EQ(sample(text, "fencelock_job_retry_total{reason=\"infrastructure\"}"), refusals);
    EXPECT_EQ(sample(text, "fencelock_job_retry_total{reason=\"business\"}"), 0);
    EXPECT_EQ(sample(text, "fencelock_job_requeue_total"), refusals);
    EXPECT_EQ(sample(text, "fencelock_job_completed_total"), 1);
    EXPECT_EQ(sample(text, "fencelock_job_duplicate_total"), 0);
    EXPECT_EQ(text.find("order:stale"), std::string::npos) << "resource ids must never become labels";
    EXPECT_EQ(effects(rejected.id), 0);
    EXPECT_EQ(effects(fine.id), 1);
    std::lock_guard lock(m);
    const auto warned = std::count_if(lines.begin(), lines.end(), [](const std::string& l) {
        return l.find("\"job_decision\"") != std::string::npos && l.find("\"lease_lost\"") != std::string::npos;
    });
    EXPECT_EQ(static_cast<double>(warned), refusals);
}

// A library user's own FencedStore reports every stale write, claim and transaction to its
// observer, as metrics and as log lines; accepted ones are not counted.
TEST_P(QueueTest, StoreReportsItsStaleRefusalsToItsObserver) {
    auto registry = std::make_shared<prometheus::Registry>();
    auto metrics = std::make_shared<PrometheusMetrics>(*registry);
    std::vector<std::string> lines;
    auto log = std::make_shared<JsonLogObserver>(LogOptions{
        .level = LogLevel::warn, .raw_resource_ids = true, .sink = [&](std::string_view l) { lines.emplace_back(l); }});
    struct Both final : StoreObserver {
        std::shared_ptr<PrometheusMetrics> m;
        std::shared_ptr<JsonLogObserver> l;
        void on_fence_rejected(const FenceRejectedEvent& e) noexcept override {
            m->on_fence_rejected(e);
            l->on_fence_rejected(e);
        }
    };
    auto options = store->options();
    auto both = std::make_shared<Both>();
    both->m = metrics;
    both->l = log;
    options.observer = both;
    auto observed = FencedStore::create(options).value();
    const auto r = ResourceName::make("acct:1").value();
    ASSERT_TRUE(observed.create_resource(r));
    ASSERT_EQ(observed.write(r, FencingToken(10), "new")->status, WriteStatus::applied);
    EXPECT_EQ(sample(scrape(*registry), "fencelock_fence_rejected_total"), 0);
    EXPECT_EQ(observed.write(r, FencingToken(9), "old")->status, WriteStatus::stale);
    EXPECT_EQ(observed.claim(r, FencingToken(8), OwnerToken::generate())->status, ClaimStatus::stale);
    auto tx =
        observed.transact(r, FencingToken(7), {}, [](Transaction&) -> std::expected<void, StoreError> { return {}; });
    ASSERT_TRUE(tx);
    EXPECT_EQ(tx->status, TransactStatus::stale);
    EXPECT_EQ(sample(scrape(*registry), "fencelock_fence_rejected_total"), 3);
    ASSERT_EQ(lines.size(), 3u);
    auto first = nlohmann::json::parse(lines[0]);
    EXPECT_EQ(first["event"], "fence_rejected");
    EXPECT_EQ(first["operation"], "write");
    EXPECT_EQ(first["fence"], 9);
    EXPECT_EQ(first["last_fence"], 10);
    EXPECT_EQ(first["resource"], "acct:1");
    EXPECT_EQ(nlohmann::json::parse(lines[1])["operation"], "claim");
    EXPECT_EQ(nlohmann::json::parse(lines[2])["operation"], "transact");
    EXPECT_EQ(observed.read(r).value()->value, "new") << "nothing stale was written";
}

}  // namespace
}  // namespace fencelock::test_support
