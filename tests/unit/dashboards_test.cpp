// The Grafana dashboard and the Prometheus alert rules in ops/ only reference metrics that
// fencelock actually exports: a renamed metric must break this test, not a 3 a.m. page.
#include <gtest/gtest.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "fencelock/metrics.hpp"
#include "fencelock/queue_metrics.hpp"
#include "unit/source_text.hpp"

namespace fencelock::test_support {
namespace {

/// Metric family names referenced in PromQL text (histogram series map to their family).
std::set<std::string> referenced_metrics(const std::string& text) {
    std::set<std::string> names;
    static const std::regex metric(R"(fencelock_[a-z_]+)");
    for (auto it = std::sregex_iterator(text.begin(), text.end(), metric); it != std::sregex_iterator(); ++it) {
        std::string name = it->str();
        for (const char* suffix : {"_bucket", "_count", "_sum"})
            if (name.ends_with(suffix)) name.resize(name.size() - std::strlen(suffix));
        names.insert(name);
    }
    return names;
}

/// Families a worker's PrometheusMetrics, QueueMetricsObserver and QueueDepthMetrics export
/// once they have seen traffic (every `# TYPE` line). A family whose labels come from traffic
/// (contention per resource type) appears after its first event.
std::set<std::string> exported_families() {
    auto registry = std::make_shared<prometheus::Registry>();
    auto metrics = std::make_shared<PrometheusMetrics>(*registry);
    QueueMetricsObserver jobs(metrics, nullptr);                     // the job_* families
    QueueDepthMetrics depth(*registry, QueueOptions{.queue = "q"});  // connects only when sampled
    const auto resource = *ResourceName::make("order:1");
    const auto owner = OwnerToken::generate();
    metrics->on_acquire({resource,
                         owner,
                         AcquireResult::contended,
                         std::nullopt,
                         1,
                         std::chrono::microseconds(5),
                         std::chrono::milliseconds(1000),
                         {},
                         1,
                         0});
    const std::string text = prometheus::TextSerializer().Serialize(registry->Collect());
    std::set<std::string> names;
    static const std::regex type_line(R"(# TYPE (\S+) )");
    for (auto it = std::sregex_iterator(text.begin(), text.end(), type_line); it != std::sregex_iterator(); ++it)
        names.insert((*it)[1]);
    return names;
}

TEST(Dashboards, AlertRulesReferenceOnlyExportedMetrics) {
    const std::string rules = source_text("ops/prometheus/alerts.yml");
    ASSERT_FALSE(rules.empty());
    const auto exported = exported_families();
    const auto used = referenced_metrics(rules);
    EXPECT_GE(used.size(), 6u);
    for (const auto& name : used) EXPECT_TRUE(exported.count(name)) << name << " is not exported";
    // The alerts the runbook promises exist.
    for (const char* alert :
         {"FencelockContentionRising", "FencelockHoldNearLease", "FencelockRenewalFailures", "FencelockLeasesLost",
          "FencelockFenceRejections", "FencelockRedisErrors", "FencelockDeadLetters", "FencelockRedisClockBehind"})
        EXPECT_NE(rules.find("alert: " + std::string(alert)), std::string::npos) << alert;
}

TEST(Dashboards, GrafanaDashboardIsValidJsonAndReferencesOnlyExportedMetrics) {
    const auto dashboard = nlohmann::json::parse(source_text("ops/grafana/fencelock.json"));
    const auto exported = exported_families();
    std::set<std::string> used;
    for (const auto& panel : dashboard.at("panels"))
        for (const auto& target : panel.at("targets")) {
            const auto names = referenced_metrics(target.at("expr").get<std::string>());
            EXPECT_FALSE(names.empty()) << panel.at("title");
            used.insert(names.begin(), names.end());
        }
    for (const auto& name : used) EXPECT_TRUE(exported.count(name)) << name << " is not exported";
    // Every exported family is on the dashboard.
    for (const auto& name : exported) EXPECT_TRUE(used.count(name)) << name << " has no panel";
}

TEST(Dashboards, CheckerNoticesAnUnknownMetric) {
    const auto exported = exported_families();
    EXPECT_FALSE(exported.count("fencelock_lock_acquire_totals"));
    EXPECT_EQ(referenced_metrics("rate(fencelock_lock_hold_duration_seconds_bucket[5m])"),
              std::set<std::string>{"fencelock_lock_hold_duration_seconds"});
}

}  // namespace
}  // namespace fencelock::test_support
