// SubscriberPlan's timing without a clock: every call is told the time, so the pauses after a
// failed node or slot map, and the subscriber's sleep, are read off exactly.
#include <gtest/gtest.h>

#include "coordinator/redis/subscriber_plan.hpp"

namespace fencelock::test_support {
namespace {

using namespace std::chrono_literals;
using Plan = detail::SubscriberPlan;
using Node = Plan::Node;
using Notifies = std::vector<Plan::Notify>;

const Plan::time_point t0{std::chrono::hours(1)};
const Node node_a{"10.0.0.1", 7000};
const Node node_b{"10.0.0.2", 7000};

TEST(SubscriberTimingTest, ANodeThatWentDownIsLeftAloneForTheRetryPauseWhichDoublesToOneSecond) {
    Plan plan;
    plan.node_down(node_a, t0, std::nullopt);
    EXPECT_TRUE(plan.offline(node_a, t0 + 49ms));
    EXPECT_FALSE(plan.offline(node_a, t0 + 50ms));
    EXPECT_FALSE(plan.offline(node_b, t0));  // each node on its own
    EXPECT_FALSE(plan.confirmation_possible(node_a, t0 + 10ms));
    EXPECT_TRUE(plan.confirmation_possible(node_b, t0 + 10ms));
    plan.node_down(node_a, t0 + 50ms, std::nullopt);
    EXPECT_TRUE(plan.offline(node_a, t0 + 149ms));
    EXPECT_FALSE(plan.offline(node_a, t0 + 150ms));
    for (int i = 0; i < 10; ++i) plan.node_down(node_a, t0, std::nullopt);
    EXPECT_TRUE(plan.offline(node_a, t0 + 999ms));
    EXPECT_FALSE(plan.offline(node_a, t0 + 1000ms));
}

TEST(SubscriberTimingTest, ANodeThatRefusedStaysDownAsLongAsTheReplySaid) {
    Plan plan;
    plan.node_down(node_a, t0, 30'000ms);
    EXPECT_TRUE(plan.offline(node_a, t0 + 29'999ms));
    EXPECT_FALSE(plan.offline(node_a, t0 + 30'000ms));
}

TEST(SubscriberTimingTest, ANodeGoingDownLosesItsChannelsSubscriptionsAndWakesTheirWaiters) {
    Plan plan;
    plan.join("ch", "a");
    EXPECT_EQ(plan.node_down(Node{}, t0, std::nullopt), (Notifies{{"ch", std::nullopt}}));
    EXPECT_EQ(plan.failures("ch"), 1u);
}

TEST(SubscriberTimingTest, WithoutASlotMapNoLoadIsEverDue) {
    Plan plan;
    plan.map_stale();
    plan.node_down(node_a, t0, std::nullopt);
    EXPECT_FALSE(plan.map_load_due(t0 + 1h));
    EXPECT_TRUE(plan.confirmation_possible(Node{}, t0));
}

TEST(SubscriberTimingTest, TheSlotMapIsLoadedFirstAndThenNoSoonerThanTheReloadPause) {
    Plan plan;
    plan.use_slot_map();
    EXPECT_TRUE(plan.map_load_due(t0));
    EXPECT_EQ(plan.map_loaded(true, t0), Notifies{});
    EXPECT_FALSE(plan.map_load_due(t0 + 1h));  // loaded, and nothing says it is out of date
    plan.map_stale();
    EXPECT_FALSE(plan.map_load_due(t0 + Plan::reload_pause - 1ms));
    EXPECT_TRUE(plan.map_load_due(t0 + Plan::reload_pause));
    plan.map_loaded(true, t0 + 1s);
    plan.node_down(node_a, t0 + 1s, std::nullopt);  // the failed master may have been replaced
    EXPECT_TRUE(plan.map_load_due(t0 + 1s + Plan::reload_pause));
}

TEST(SubscriberTimingTest, AFailedLoadLeavesChannelsUnroutableUntilTheRetryAndStopsTheirWaiters) {
    Plan plan;
    plan.use_slot_map();
    plan.join("ch", "a");
    EXPECT_EQ(plan.map_loaded(false, t0), (Notifies{{"ch", std::nullopt}}));
    EXPECT_FALSE(plan.confirmation_possible(std::nullopt, t0 + 49ms));
    EXPECT_FALSE(plan.map_load_due(t0 + 49ms));
    EXPECT_TRUE(plan.confirmation_possible(std::nullopt, t0 + 50ms));
    EXPECT_TRUE(plan.map_load_due(t0 + 50ms));  // still wanted: tried again after the pause
    EXPECT_EQ(plan.map_loaded(false, t0 + 50ms), (Notifies{{"ch", std::nullopt}}));
    EXPECT_FALSE(plan.map_load_due(t0 + 50ms + 99ms));  // the pause doubled
    EXPECT_TRUE(plan.map_load_due(t0 + 50ms + 100ms));
}

TEST(SubscriberTimingTest, TheSubscriberSleepsUntilTheEarliestThingDue) {
    Plan plan(1000ms);
    EXPECT_EQ(plan.quiet_for(t0, false), std::nullopt);  // nothing due: until an event
    EXPECT_EQ(plan.quiet_for(t0, true), Plan::master_check);
    const auto a = plan.join("ch", "a").ticket;
    plan.node_down(node_a, t0, std::nullopt);
    EXPECT_EQ(plan.quiet_for(t0, true), 50ms);
    EXPECT_EQ(plan.quiet_for(t0 + 20ms, false), 30ms);
    EXPECT_EQ(plan.quiet_for(t0 + 60ms, false), std::nullopt);  // back online: nothing left
    const auto t1 = t0 + 60ms;
    plan.commands([](const std::string&) { return Node{}; }, t1);  // SSUBSCRIBE ch
    plan.leave("ch", a, false, t1);
    plan.node_down(node_a, t1, std::nullopt);  // offline until t1 + 100 ms
    // Nobody waits: an offline node does not matter, but the idle channel lingers for 1 s.
    EXPECT_EQ(plan.quiet_for(t1, false), 1000ms);
    EXPECT_EQ(plan.quiet_for(t0 + 2s, false), 0ms);  // overdue: at once
}

TEST(SubscriberTimingTest, ADueSlotMapLoadBoundsTheSleep) {
    Plan plan;
    plan.use_slot_map();
    EXPECT_EQ(plan.quiet_for(t0, false), 0ms);
    plan.map_loaded(true, t0);
    EXPECT_EQ(plan.quiet_for(t0, false), std::nullopt);
    plan.map_stale();
    EXPECT_EQ(plan.quiet_for(t0 + 40ms, false), 60ms);
}

}  // namespace
}  // namespace fencelock::test_support
