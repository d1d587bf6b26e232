// Only a process that runs jobs exports job_* series: a lock-only process (fencelock run) shows
// none that would read as an idle worker. The families appear, at zero, when a
// QueueMetricsObserver is attached. No servers; `fencelock run --metrics-addr` itself is
// tests/integration/obs_test.cpp.
#include <gtest/gtest.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include "fencelock/queue_metrics.hpp"
#include "support/scrape.hpp"

namespace fencelock::test_support {
namespace {

std::string scrape(prometheus::Registry& registry) {
    return "\n" + prometheus::TextSerializer().Serialize(registry.Collect());
}

constexpr const char* job_families[] = {"fencelock_job_retry_total",     "fencelock_job_requeue_total",
                                        "fencelock_job_aborted_total",   "fencelock_job_duplicate_total",
                                        "fencelock_job_completed_total", "fencelock_job_dead_total"};

TEST(JobFamilies, ALockOnlyProcessExportsNoJobSeries) {
    prometheus::Registry registry;
    auto metrics = std::make_shared<PrometheusMetrics>(registry);
    const std::string text = scrape(registry);
    EXPECT_NE(text.find("# TYPE fencelock_lock_acquire_total"), std::string::npos);
    EXPECT_EQ(text.find("fencelock_job_"), std::string::npos) << text;
    EXPECT_EQ(text.find("source=\"worker\""), std::string::npos) << text;
}

TEST(JobFamilies, AQueueObserverRegistersThemAtZeroOnce) {
    prometheus::Registry registry;
    auto metrics = std::make_shared<PrometheusMetrics>(registry);
    QueueMetricsObserver observer(metrics, nullptr);
    QueueMetricsObserver second(metrics, nullptr);  // a second one must not register them again
    const std::string text = scrape(registry);
    for (const char* family : job_families)
        EXPECT_NE(text.find(std::string("# TYPE ") + family + " counter"), std::string::npos) << family;
    EXPECT_EQ(sample(text, "fencelock_job_retry_total{reason=\"business\"}"), 0);
    EXPECT_EQ(sample(text, "fencelock_job_completed_total"), 0);
    EXPECT_EQ(sample(text, "fencelock_redis_errors_total{source=\"worker\"}"), 0);
}

TEST(JobFamilies, AJobCounterUsedDirectlyRegistersThemToo) {
    prometheus::Registry registry;
    PrometheusMetrics metrics(registry);
    metrics.job_retry("contention");
    const std::string text = scrape(registry);
    EXPECT_EQ(sample(text, "fencelock_job_retry_total{reason=\"contention\"}"), 1);
    EXPECT_EQ(sample(text, "fencelock_job_dead_total"), 0);
}

}  // namespace
}  // namespace fencelock::test_support
