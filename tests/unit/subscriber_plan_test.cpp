// The release notifier's subscriber plan without Redis: a scripted subscriber connection
// records what the plan sends and delivers acknowledgements, messages and connection losses.
#include "coordinator/redis/subscriber_plan.hpp"

#include <gtest/gtest.h>

#include "scripted_connection.hpp"

namespace fencelock::test_support {
namespace {

using Plan = detail::SubscriberPlan;
using Sent = std::vector<std::string>;
using Notifies = std::vector<Plan::Notify>;

// A plan and the scripted subscriber connection it talks through.
class SubscriberPlanTest : public ::testing::Test {
protected:
    Plan plan;
    ScriptedSubscriberConnection redis{plan};
};

TEST_F(SubscriberPlanTest, TheFirstWaiterSubscribesAndLaterOnesDoNot) {
    EXPECT_FALSE(plan.wanted());
    EXPECT_TRUE(plan.join("ch", "a").first);
    EXPECT_TRUE(plan.wanted());
    EXPECT_EQ(redis.flush(), (Sent{"SSUBSCRIBE ch"}));
    EXPECT_FALSE(plan.join("ch", "b").first);
    EXPECT_EQ(redis.flush(), Sent{});
    EXPECT_EQ(redis.sent(), (Sent{"SSUBSCRIBE ch"}));
}

TEST_F(SubscriberPlanTest, OnlyTheAcknowledgementConfirmsAndWakesThoseWaitingForIt) {
    plan.join("ch", "a");
    redis.flush();
    EXPECT_FALSE(plan.confirmed("ch"));
    EXPECT_EQ(redis.ack("ch"), (Notifies{{"ch", std::nullopt}}));
    EXPECT_TRUE(plan.confirmed("ch"));
    EXPECT_EQ(redis.ack("other"), Notifies{});  // nobody waits there
}

TEST_F(SubscriberPlanTest, TheLastWaiterLeavingUnsubscribes) {
    const auto a = plan.join("ch", "a").ticket;
    const auto b = plan.join("ch", "b").ticket;
    redis.flush();
    redis.ack("ch");
    EXPECT_FALSE(plan.leave("ch", a, false).last);
    EXPECT_EQ(redis.flush(), Sent{});
    EXPECT_TRUE(plan.leave("ch", b, false).last);
    EXPECT_FALSE(plan.has_waiters("ch"));
    EXPECT_EQ(redis.flush(), (Sent{"SUNSUBSCRIBE ch"}));
    EXPECT_FALSE(plan.confirmed("ch"));
    EXPECT_EQ(redis.flush(), Sent{});
}

TEST_F(SubscriberPlanTest, ALateAcknowledgementDoesNotConfirmALaterSubscription) {
    // Subscribe, unsubscribe, subscribe again before the first acknowledgement arrives.
    const auto first = plan.join("ch", "a").ticket;
    EXPECT_EQ(redis.flush(), (Sent{"SSUBSCRIBE ch"}));
    plan.leave("ch", first, false);
    EXPECT_EQ(redis.flush(), (Sent{"SUNSUBSCRIBE ch"}));
    plan.join("ch", "b");
    EXPECT_EQ(redis.flush(), (Sent{"SSUBSCRIBE ch"}));
    redis.ack("ch");
    EXPECT_FALSE(plan.confirmed("ch"));               // that one answered the first SSUBSCRIBE
    EXPECT_EQ(redis.unsubscribed("ch"), Notifies{});  // the answer to our SUNSUBSCRIBE: no loss
    EXPECT_FALSE(redis.last().reload_map);
    redis.ack("ch");
    EXPECT_TRUE(plan.confirmed("ch"));
}

TEST_F(SubscriberPlanTest, AReconnectResubscribesEveryChannelAndWakesThoseThatReliedOnIt) {
    const auto a = plan.join("one", "a").ticket;
    const auto b = plan.join("two", "b").ticket;
    EXPECT_EQ(redis.flush(), (Sent{"SSUBSCRIBE one", "SSUBSCRIBE two"}));
    redis.ack("one");  // "two" is still waiting for its confirmation
    const auto failures = plan.failures("two");
    EXPECT_EQ(redis.disconnect(), (Notifies{{"one", std::nullopt}, {"two", std::nullopt}}));
    EXPECT_FALSE(plan.confirmed("one"));
    EXPECT_NE(plan.failures("two"), failures);  // stops waiting for a confirmation
    EXPECT_TRUE(plan.take_wake("one", a));      // releases may have gone unseen: look yourself
    EXPECT_FALSE(plan.take_wake("two", b));     // never relied on a subscription
    EXPECT_EQ(redis.flush(), (Sent{"SSUBSCRIBE one", "SSUBSCRIBE two"}));
    redis.ack("one");
    redis.ack("two");
    EXPECT_TRUE(plan.confirmed("one"));
    EXPECT_TRUE(plan.confirmed("two"));
}

TEST_F(SubscriberPlanTest, AMessageNamingAWaiterWakesOnlyThatOne) {
    const auto a = plan.join("ch", "a").ticket;
    const auto b = plan.join("ch", "b").ticket;
    redis.flush();
    redis.ack("ch");
    EXPECT_EQ(redis.message("ch", "b"), (Notifies{{"ch", b}}));
    EXPECT_EQ(redis.message("ch", "elsewhere"), Notifies{});  // a fair waiter of another process
    EXPECT_FALSE(plan.take_wake("ch", a));
    EXPECT_TRUE(plan.take_wake("ch", b));
}

TEST_F(SubscriberPlanTest, AnAnonymousMessageWakesTheFirstWaiterNotAwake) {
    const auto a = plan.join("ch", "a").ticket;
    const auto b = plan.join("ch", "b").ticket;
    redis.flush();
    EXPECT_EQ(redis.message("ch"), (Notifies{{"ch", a}}));
    EXPECT_EQ(redis.message("ch"), (Notifies{{"ch", b}}));
    EXPECT_EQ(redis.message("ch"), Notifies{});
    EXPECT_EQ(redis.message("unknown"), Notifies{});
}

TEST_F(SubscriberPlanTest, AnUnusedWakeUpIsHandedOnUnlessTheLeaverGotTheLock) {
    const auto a = plan.join("ch", "a").ticket;
    const auto b = plan.join("ch", "b").ticket;
    const auto c = plan.join("ch", "c").ticket;
    redis.message("ch");  // wakes a
    EXPECT_EQ(plan.leave("ch", a, false).wake, b);
    redis.message("ch");  // wakes c
    EXPECT_EQ(plan.leave("ch", c, true).wake, std::nullopt);
    EXPECT_EQ(plan.pass_on("ch", b), std::nullopt);  // nobody behind b
    EXPECT_EQ(plan.ahead("ch", b), 0u);
}

// The next waiter of a local line may never have attempted (it waited behind the front), so
// nothing in Redis tells a release it waits: when the front gives up, the new front is woken to
// attempt. A front leaving with the lock wakes nobody (its lease is marked, its release wakes).
TEST_F(SubscriberPlanTest, AFrontLeavingWithoutTheLockWakesTheNewFront) {
    const auto a = plan.join("ch", "a").ticket;
    const auto b = plan.join("ch", "b").ticket;
    const auto c = plan.join("ch", "c").ticket;
    EXPECT_EQ(plan.leave("ch", b, false).wake, std::nullopt) << "b was not the front";
    EXPECT_EQ(plan.leave("ch", a, false).wake, c);
    EXPECT_TRUE(plan.take_wake("ch", c));
    const auto d = plan.join("ch", "d").ticket;
    EXPECT_EQ(plan.leave("ch", c, true).wake, std::nullopt) << "granted: its release wakes d";
    EXPECT_EQ(plan.ahead("ch", d), 0u);
}

TEST_F(SubscriberPlanTest, ARefusedSubscriptionPausesLongOtherErrorsBackOff) {
    plan.join("ch", "a");
    redis.flush();
    redis.push(Reply::make_error("NOPERM this user has no permissions to access the 'ch' channel"));
    EXPECT_EQ(redis.reconnect_after(), 30'000ms);
    redis.push(Reply::make_error("ERR something"));
    EXPECT_EQ(redis.reconnect_after(), 50ms);
    redis.push(Reply::make_error("ERR something"));
    EXPECT_EQ(redis.reconnect_after(), 100ms);
    for (int i = 0; i < 10; ++i) redis.push(Reply::make_error("ERR something"));
    EXPECT_EQ(redis.reconnect_after(), 1000ms);
    redis.disconnect();
    redis.flush();
    redis.ack("ch");  // a confirmed subscription starts the pauses over
    EXPECT_EQ(plan.next_retry(), 50ms);
    redis.push(A({S("pong"), S("")}));
    EXPECT_EQ(redis.reconnect_after(), std::nullopt);
}

TEST_F(SubscriberPlanTest, AnIdleChannelIsForgottenAndItsLateAcknowledgementConfirmsNothing) {
    plan.leave("ch", plan.join("ch", "a").ticket, false);
    EXPECT_EQ(redis.flush(), Sent{});  // never subscribed: nothing to undo
    const auto b = plan.join("ch", "b").ticket;
    redis.flush();
    plan.leave("ch", b, false);
    EXPECT_EQ(redis.flush(), (Sent{"SUNSUBSCRIBE ch"}));
    EXPECT_FALSE(plan.wanted());
    plan.join("ch", "c");
    EXPECT_EQ(redis.flush(), (Sent{"SSUBSCRIBE ch"}));
    EXPECT_EQ(redis.ack("ch"), Notifies{});  // answers the first SSUBSCRIBE
    redis.unsubscribed("ch");
    EXPECT_FALSE(plan.confirmed("ch"));
    EXPECT_EQ(redis.ack("ch"), (Notifies{{"ch", std::nullopt}}));
    EXPECT_TRUE(plan.confirmed("ch"));
}

// Sharded pub/sub on a cluster: each channel on the master of its slot.
const Plan::Node node_a{"127.0.0.1", 7001};
const Plan::Node node_b{"127.0.0.1", 7002};

TEST_F(SubscriberPlanTest, EachChannelIsSubscribedOnItsSlotsNodeAndANodeFailsAlone) {
    redis.route("one", node_a);
    redis.route("two", node_b);
    const auto a = plan.join("one", "a").ticket;
    plan.join("two", "b");
    EXPECT_EQ(redis.flush(), (Sent{"SSUBSCRIBE one @127.0.0.1:7001", "SSUBSCRIBE two @127.0.0.1:7002"}));
    redis.ack("one", node_a);
    redis.ack("two", node_b);
    EXPECT_EQ(redis.disconnect(node_b), (Notifies{{"two", std::nullopt}}));
    EXPECT_TRUE(plan.confirmed("one"));
    EXPECT_FALSE(plan.confirmed("two"));
    EXPECT_FALSE(plan.take_wake("one", a));
    EXPECT_EQ(redis.message("one", "", node_a), (Notifies{{"one", a}}));
    EXPECT_EQ(redis.flush(), (Sent{"SSUBSCRIBE two @127.0.0.1:7002"}));
}

TEST_F(SubscriberPlanTest, AMovedAnswerTeachesTheMapAndTheSubscriptionGoesToTheNamedNode) {
    redis.route("ch", node_a);
    plan.join("ch", "a");
    redis.flush();
    const auto failures = plan.failures("ch");
    EXPECT_EQ(redis.push(Reply::make_error("MOVED 1234 127.0.0.1:7002"), node_a), Notifies{});
    ASSERT_TRUE(redis.last().moved);
    EXPECT_EQ(redis.last().moved->slot, 1234);
    EXPECT_EQ(redis.last().moved->to, node_b);
    EXPECT_EQ(redis.reconnect_after(), std::nullopt);  // the node is fine: keep its connection
    EXPECT_FALSE(plan.confirmed("ch"));
    EXPECT_EQ(plan.failures("ch"), failures);  // a waiter for the confirmation keeps waiting
    redis.route("ch", node_b);                 // what the corrected map says
    EXPECT_EQ(redis.flush(), (Sent{"SSUBSCRIBE ch @127.0.0.1:7002"}));
    EXPECT_EQ(redis.ack("ch", node_b), (Notifies{{"ch", std::nullopt}}));
    EXPECT_TRUE(plan.confirmed("ch"));
}

TEST_F(SubscriberPlanTest, ANodesOwnUnsubscribeWhenTheSlotLeavesIsALostSubscription) {
    redis.route("ch", node_a);
    const auto a = plan.join("ch", "a").ticket;
    redis.flush();
    redis.ack("ch", node_a);
    EXPECT_EQ(redis.unsubscribed("ch", node_a), (Notifies{{"ch", std::nullopt}}));
    EXPECT_TRUE(redis.last().reload_map);
    EXPECT_FALSE(plan.confirmed("ch"));
    EXPECT_TRUE(plan.take_wake("ch", a));  // releases may go unseen until resubscribed: look yourself
    redis.route("ch", node_b);
    EXPECT_EQ(redis.flush(), (Sent{"SSUBSCRIBE ch @127.0.0.1:7002"}));
    redis.ack("ch", node_b);
    EXPECT_TRUE(plan.confirmed("ch"));
    EXPECT_EQ(redis.unsubscribed("ch", node_a), Notifies{});  // the old node no longer matters
    EXPECT_TRUE(plan.confirmed("ch"));
}

TEST_F(SubscriberPlanTest, AChannelWithoutARouteWaitsAndItsWaitersStopIfNoneCanBeFound) {
    redis.route("ch", std::nullopt);
    plan.join("ch", "a");
    EXPECT_EQ(redis.flush(), Sent{});
    const auto failures = plan.failures("ch");
    EXPECT_EQ(plan.on_unroutable(), (Notifies{{"ch", std::nullopt}}));
    EXPECT_NE(plan.failures("ch"), failures);
    redis.route("ch", node_a);
    EXPECT_EQ(redis.flush(), (Sent{"SSUBSCRIBE ch @127.0.0.1:7001"}));
    EXPECT_EQ(plan.on_unroutable(), Notifies{});  // placed: nothing to stop
}

TEST_F(SubscriberPlanTest, RedirectsInCirclesCountAsAFailingNode) {
    plan.join("ch", "a");
    for (unsigned i = 0; i < Plan::max_redirects; ++i) {
        redis.route("ch", i % 2 ? node_b : node_a);
        redis.flush();
        redis.push(Reply::make_error(i % 2 ? "MOVED 1 127.0.0.1:7001" : "MOVED 1 127.0.0.1:7002"),
                   i % 2 ? node_b : node_a);
        EXPECT_EQ(redis.reconnect_after(), std::nullopt) << i;
    }
    redis.route("ch", node_a);
    redis.flush();
    redis.push(Reply::make_error("MOVED 1 127.0.0.1:7002"), node_a);
    EXPECT_EQ(redis.reconnect_after(), 50ms);
}

}  // namespace
}  // namespace fencelock::test_support
