// One version number: CMake's project(VERSION) is what the library reports and what every
// metrics endpoint exports (fencelock --version: tests/integration/cli/cli_test.cpp).
#include "fencelock/version.hpp"

#include <gtest/gtest.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <regex>

#include "fencelock/metrics.hpp"
#include "support/scrape.hpp"

namespace fencelock::test_support {
namespace {

TEST(Version, IsTheProjectsAndNamesACommitOrSaysUnknown) {
    EXPECT_EQ(version(), PROJECT_VERSION);
    EXPECT_TRUE(std::regex_match(std::string(version()), std::regex(R"(\d+\.\d+\.\d+)"))) << version();
    const std::string rev(revision());
    EXPECT_TRUE(rev == "unknown" || std::regex_match(rev, std::regex("[0-9a-f]{12}"))) << rev;
}

TEST(Version, EveryMetricsEndpointExportsTheBuild) {
    prometheus::Registry registry;
    PrometheusMetrics metrics(registry);
    const std::string text = "\n" + prometheus::TextSerializer().Serialize(registry.Collect());
    const std::string series =
        "fencelock_build_info{revision=\"" + std::string(revision()) + "\",version=\"" + std::string(version()) + "\"}";
    EXPECT_EQ(sample(text, series), 1) << text.substr(0, 400);
}

}  // namespace
}  // namespace fencelock::test_support
