// The mutual-exclusion checker of tests/integration (check_holds) must be able to fail, or a
// green run of the exclusion test proves nothing. Fed hand-made histories; no servers.
#include <gtest/gtest.h>

#include "integration/hold_history.hpp"

namespace fencelock::test_support {
namespace {

TEST(HistoryChecker, ReportsOverlapAndFenceRegression) {
    std::vector<Hold> overlapping{{"r", 1, 0, 100, "a"}, {"r", 2, 50, 150, "b"}};
    EXPECT_EQ(check_holds(overlapping).size(), 1u);
    std::vector<Hold> regressing{{"r", 5, 0, 100, "a"}, {"r", 4, 200, 300, "b"}};
    EXPECT_EQ(check_holds(regressing).size(), 1u);
    std::vector<Hold> fine{{"r", 1, 0, 100, "a"}, {"r", 2, 100, 300, "b"}, {"s", 1, 50, 60, "c"}};
    EXPECT_TRUE(check_holds(fine).empty());
}

}  // namespace
}  // namespace fencelock::test_support
