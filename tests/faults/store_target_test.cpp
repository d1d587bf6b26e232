// StoreTarget, the scenarios' adapter over the real stores: the fence rule comes from the
// store (off in the negative control), and the accepted-writes log holds exactly what the
// database committed, in commit order, whoever reads it.
#include <thread>

#include "faults/scenario.hpp"

namespace fencelock::faults {
namespace {

using StoreTargetTest = ScenarioTest;

TEST_P(StoreTargetTest, AppliesTheStoresFenceRuleAndLogsOnlyWhatCommitted) {
    Target& t = *target;
    EXPECT_EQ(t.write("r", "a", 2, "a").status, TargetStatus::applied);
    const auto older = t.write("r", "b", 1, "b").status;
    const auto equal = t.write("r", "c", 2, "c").status;
    EXPECT_EQ(t.write("r", "x", 3, "a").status, TargetStatus::duplicate) << "a key takes effect once";
    const auto log = t.accepted();
    if (fencing()) {
        EXPECT_EQ(older, TargetStatus::stale);
        EXPECT_EQ(equal, TargetStatus::stale) << "an equal fence is stale";
        EXPECT_EQ(t.read("r"), "a");
        EXPECT_EQ(t.last_fence("r"), 2u);
        ASSERT_EQ(log.size(), 1u);
    } else {
        EXPECT_EQ(older, TargetStatus::applied);
        EXPECT_EQ(equal, TargetStatus::applied);
        EXPECT_EQ(t.read("r"), "c");
        ASSERT_EQ(log.size(), 3u);
        EXPECT_EQ(check_fence_order(log).size(), 2u);
    }
    EXPECT_EQ(log.back().value, t.read("r"));
    // A second connection, opened as a worker process opens it, sees the same data and log.
    auto other = open_target(target_spec());
    EXPECT_EQ(other->fencing(), fencing());
    EXPECT_EQ(other->read("r"), t.read("r"));
    EXPECT_EQ(other->accepted().size(), log.size());
}

TEST_P(StoreTargetTest, ConcurrentWritersLeaveALogInCommitOrder) {
    {
        std::vector<std::jthread> threads;
        for (int i = 0; i < 4; ++i)
            threads.emplace_back([&, i] {
                auto mine = open_target(target_spec());
                for (int k = 1; k <= 25; ++k) {
                    const auto fence = static_cast<std::uint64_t>(k * 4 + i);
                    (void)mine->write("r", std::to_string(fence), fence, "");
                }
            });
    }
    const auto log = target->accepted();
    ASSERT_FALSE(log.empty());
    EXPECT_EQ(log.back().value, target->read("r")) << "the last logged write is the final state";
    if (fencing()) {
        EXPECT_TRUE(check_fence_order(log).empty());
        EXPECT_EQ(log.back().fence, target->last_fence("r"));
    } else {
        EXPECT_EQ(log.size(), 100u) << "unfenced, every write is accepted";
    }
}

INSTANTIATE_TEST_SUITE_P(Targets, StoreTargetTest, ::testing::ValuesIn(stores_only()), mode_name);

}  // namespace
}  // namespace fencelock::faults
