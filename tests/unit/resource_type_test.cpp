// PrometheusMetrics' label for a resource: its type, the part before the separator, never the id
// itself. No servers; the metrics of a scripted lock scenario are tests/integration/obs_test.cpp.
#include <gtest/gtest.h>
#include <prometheus/registry.h>

#include "fencelock/metrics.hpp"

namespace fencelock {
namespace {

TEST(ResourceType, IsThePartBeforeTheSeparator) {
    prometheus::Registry registry;
    PrometheusMetrics metrics(registry);
    EXPECT_EQ(metrics.resource_type("order:42"), "order");
    EXPECT_EQ(metrics.resource_type("order:42:line:3"), "order");
    EXPECT_EQ(metrics.resource_type("plainid"), "untyped");
    EXPECT_EQ(metrics.resource_type(":x"), "untyped");
    PrometheusMetrics slashed(registry, {.name_prefix = "other_", .resource_type_separator = '/'});
    EXPECT_EQ(slashed.resource_type("tenant/7"), "tenant");
}

}  // namespace
}  // namespace fencelock
