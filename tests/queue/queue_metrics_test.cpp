// QueueMetricsObserver, the library's adapter from job decisions to Prometheus metrics and
// JSON logs: fence rejections are counted by the decision's cause (fed by hand, no servers),
// and a worker whose job's fence the store refuses moves the metrics (real Redis and store).
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <algorithm>
#include <mutex>

#include "fencelock/queue_metrics.hpp"
#include "queue_fixture.hpp"
#include "support/scrape.hpp"

namespace fencelock::testing {
namespace {

using std::chrono::milliseconds;
using namespace std::chrono_literals;

std::string scrape(prometheus::Registry& registry) {
    return "\n" + prometheus::TextSerializer().Serialize(registry.Collect());
}

Decision decision(Verdict v, DecisionCause cause, std::string reason) {
    return Decision{.verdict = v, .cause = cause,
                    .job = Job{.id = "0123456789abcdef0123456789abcdef", .queue = "q",
                               .resource = ResourceName::make("order:1").value(), .idempotency_key = "k",
                               .payload = "{}", .contention_attempts = 0, .business_attempts = 0,
                               .infrastructure_attempts = 1, .deliveries = 1, .last_error = {}},
                    .delay = milliseconds(250), .reason = std::move(reason), .fence = FencingToken(8), .error = {}};
}

TEST(QueueMetricsObserver, CountsFenceRejectionsByCauseNotByReason) {
    prometheus::Registry registry;
    auto metrics = std::make_shared<PrometheusMetrics>(registry);
    QueueMetricsObserver observer(metrics, nullptr);
    // A lost lease whose text happens to read like a fence rejection is not one...
    observer.on_decision(decision(Verdict::lease_lost, DecisionCause::lease_lost, "stale fence, or so it says"));
    std::string text = scrape(registry);
    EXPECT_EQ(sample(text, "fencelock_fence_rejected_total"), 0);
    EXPECT_EQ(sample(text, "fencelock_job_aborted_total{reason=\"lease_lost\"}"), 1);
    // ...and a rejection is one whatever its text says.
    observer.on_decision(decision(Verdict::lease_lost, DecisionCause::stale_fence, "refused"));
    observer.on_decision(decision(Verdict::requeue_contended, DecisionCause::contention, ""));
    observer.on_decision(decision(Verdict::duplicate, DecisionCause::none, ""));
    observer.on_decision(decision(Verdict::cancelled, DecisionCause::shutdown, ""));
    text = scrape(registry);
    EXPECT_EQ(sample(text, "fencelock_fence_rejected_total"), 1);
    EXPECT_EQ(sample(text, "fencelock_job_aborted_total{reason=\"lease_lost\"}"), 2);
    EXPECT_EQ(sample(text, "fencelock_job_aborted_total{reason=\"shutdown\"}"), 1);
    EXPECT_EQ(sample(text, "fencelock_job_retry_total{reason=\"infrastructure\"}"), 2);
    EXPECT_EQ(sample(text, "fencelock_job_retry_total{reason=\"contention\"}"), 1);
    EXPECT_EQ(sample(text, "fencelock_job_requeue_total"), 3);
    EXPECT_EQ(sample(text, "fencelock_job_duplicate_total"), 1);
    EXPECT_EQ(text.find("order:1"), std::string::npos) << "resource ids must never become labels";

    QueueMetricsObserver neither(nullptr, nullptr);  // both optional
    neither.on_decision(decision(Verdict::lease_lost, DecisionCause::stale_fence, ""));
    neither.on_transport_error(make_error_code(errc::unavailable));
}

// A newer holder already reached the store (its fence is far above any Redis hands out): every
// attempt of the job is refused as stale, nothing is written, and the worker's metrics say so.
TEST_P(QueueTest, FenceRejectedJobMovesTheQueueMetrics) {
    auto registry = std::make_shared<prometheus::Registry>();
    auto metrics = std::make_shared<PrometheusMetrics>(*registry);
    std::mutex m;
    std::vector<std::string> lines;
    auto log = std::make_shared<JsonLogObserver>(LogOptions{.level = LogLevel::info, .raw_resource_ids = false,
                                                            .sink = [&](std::string_view l) {
                                                                std::lock_guard lock(m);
                                                                lines.emplace_back(l);
                                                            }});
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
    BackgroundWorker w(QueueWorker::create(queue_options(), options, locks, *store).value(),
                       [](const JobContext& ctx, Transaction& tx) { return insert_effect(ctx, tx); });
    ASSERT_TRUE(eventually([&] {
        return sample(scrape(*registry), "fencelock_fence_rejected_total") >= 2 && stats().counter("completed") == 1;
    }, 30s)) << describe(stats());
    const auto ws = w.stop();

    const std::string text = scrape(*registry);
    const double refusals = sample(text, "fencelock_fence_rejected_total");
    EXPECT_GE(refusals, 2);
    EXPECT_EQ(refusals, static_cast<double>(ws.lease_lost)) << "every lost lease here was a refused fence";
    EXPECT_EQ(sample(text, "fencelock_job_aborted_total{reason=\"lease_lost\"}"), refusals);
    EXPECT_EQ(sample(text, "fencelock_job_retry_total{reason=\"infrastructure\"}"), refusals);
    EXPECT_EQ(sample(text, "fencelock_job_retry_total{reason=\"business\"}"), 0);
    EXPECT_EQ(sample(text, "fencelock_job_requeue_total"), refusals);
    EXPECT_EQ(text.find("order:stale"), std::string::npos) << "resource ids must never become labels";
    EXPECT_EQ(effects(rejected.id), 0);
    EXPECT_EQ(effects(fine.id), 1);
    std::lock_guard lock(m);
    const auto warned = std::count_if(lines.begin(), lines.end(), [](const std::string& l) {
        return l.find("\"job_decision\"") != std::string::npos && l.find("\"lease_lost\"") != std::string::npos;
    });
    EXPECT_EQ(static_cast<double>(warned), refusals);
}

}  // namespace
}  // namespace fencelock::testing
