// QueueMetricsObserver, the library's adapter from job decisions to Prometheus metrics, fed
// decisions by hand: a stale fence and a lost lease are told apart by the decision's cause,
// never by its text, and fence rejections are left to the store that refused them (counting
// them here too would count each twice). No servers; the adapter inside a running worker is
// tests/queue/queue_metrics_test.cpp.
#include <gtest/gtest.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include "fencelock/error.hpp"
#include "fencelock/queue_metrics.hpp"
#include "support/scrape.hpp"

namespace fencelock::test_support {
namespace {

using std::chrono::milliseconds;

std::string scrape(prometheus::Registry& registry) {
    return "\n" + prometheus::TextSerializer().Serialize(registry.Collect());
}

Decision decision(Verdict v, DecisionCause cause, std::string reason) {
    return Decision{.verdict = v,
                    .cause = cause,
                    .job = Job{.id = "0123456789abcdef0123456789abcdef",
                               .queue = "q",
                               .resource = ResourceName::make("order:1").value(),
                               .idempotency_key = "k",
                               .payload = "{}",
                               .contention_attempts = 0,
                               .business_attempts = 0,
                               .infrastructure_attempts = 1,
                               .deliveries = 1,
                               .last_error = {}},
                    .delay = milliseconds(250),
                    .reason = std::move(reason),
                    .fence = FencingToken(8),
                    .error = {}};
}

TEST(QueueMetricsObserver, CountsDecisionsAndLeavesFenceRejectionsToTheStore) {
    prometheus::Registry registry;
    auto metrics = std::make_shared<PrometheusMetrics>(registry);
    QueueMetricsObserver observer(metrics, nullptr);
    observer.on_decision(decision(Verdict::lease_lost, DecisionCause::lease_lost, "stale fence, or so it says"));
    std::string text = scrape(registry);
    EXPECT_EQ(sample(text, "fencelock_job_aborted_total{reason=\"lease_lost\"}"), 1);
    observer.on_decision(decision(Verdict::lease_lost, DecisionCause::stale_fence, "refused"));
    observer.on_decision(decision(Verdict::requeue_contended, DecisionCause::contention, ""));
    observer.on_decision(decision(Verdict::duplicate, DecisionCause::none, ""));
    observer.on_decision(decision(Verdict::cancelled, DecisionCause::shutdown, ""));
    observer.on_decision(decision(Verdict::completed, DecisionCause::none, ""));
    observer.on_decision(decision(Verdict::completed, DecisionCause::none, ""));
    observer.on_decision(decision(Verdict::dead, DecisionCause::handler, "failed 5 times"));
    observer.on_transport_error(make_error_code(errc::unavailable));
    observer.on_transport_error(make_error_code(errc::reply_timeout));
    text = scrape(registry);
    EXPECT_EQ(sample(text, "fencelock_fence_rejected_total"), 0) << "the store counts its own refusals";
    EXPECT_EQ(sample(text, "fencelock_job_aborted_total{reason=\"lease_lost\"}"), 2);
    EXPECT_EQ(sample(text, "fencelock_job_aborted_total{reason=\"shutdown\"}"), 1);
    EXPECT_EQ(sample(text, "fencelock_job_retry_total{reason=\"infrastructure\"}"), 2);
    EXPECT_EQ(sample(text, "fencelock_job_retry_total{reason=\"contention\"}"), 1);
    EXPECT_EQ(sample(text, "fencelock_job_requeue_total"), 3);
    EXPECT_EQ(sample(text, "fencelock_job_duplicate_total"), 1);
    EXPECT_EQ(sample(text, "fencelock_job_completed_total"), 2);
    EXPECT_EQ(sample(text, "fencelock_job_dead_total"), 1);
    EXPECT_EQ(sample(text, "fencelock_redis_errors_total{source=\"worker\"}"), 2);
    EXPECT_EQ(text.find("order:1"), std::string::npos) << "resource ids must never become labels";

    QueueMetricsObserver neither(nullptr, nullptr);  // both optional
    neither.on_decision(decision(Verdict::lease_lost, DecisionCause::stale_fence, ""));
    neither.on_transport_error(make_error_code(errc::unavailable));
}

}  // namespace
}  // namespace fencelock::test_support
