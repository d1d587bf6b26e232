// The failover grace's age rule (redis/sentinel_views.hpp): the youngest view among a majority
// of sentinels naming the same master, so an answer that errs early cannot shorten the grace.
#include <gtest/gtest.h>

#include "redis/sentinel_views.hpp"

namespace fencelock::detail {
namespace {

using namespace std::chrono_literals;
using Answers = std::vector<std::optional<SentinelAnswer>>;

const ServerAddress a{"127.0.0.1", 7001};
const ServerAddress b{"127.0.0.1", 7002};

std::optional<SentinelAnswer> names(const ServerAddress& master, std::chrono::milliseconds age, std::uint64_t epoch = 3) {
    return SentinelAnswer{master, MasterView{age, epoch}};
}

TEST(SentinelViews, ASentinelCutOffThroughAFailoverAndBackCannotShortenTheGrace) {
    // The review's run: two sentinels saw A promoted 5 s ago; the third missed A -> B -> A and
    // kept its 91 s old record in the same epoch.
    const Answers answers{names(a, 91115ms), names(a, 5116ms), names(a, 5129ms)};
    EXPECT_EQ(youngest_agreeing_view(answers, a, 3).age, 5116ms);
}

TEST(SentinelViews, ASentinelWhoseClockSteppedForwardCannotShortenTheGrace) {
    const Answers answers{names(a, 64000ms), names(a, 4000ms)};
    EXPECT_EQ(youngest_agreeing_view(answers, a, 3).age, 4000ms);
}

TEST(SentinelViews, ARestartedSentinelLengthensTheGrace) {
    const Answers answers{names(a, 600000ms), names(a, 1200ms), names(a, 600000ms)};
    EXPECT_EQ(youngest_agreeing_view(answers, a, 3).age, 1200ms);
}

TEST(SentinelViews, FewerThanAMajorityAgreeingServesTheWholeGrace) {
    EXPECT_EQ(youngest_agreeing_view({names(a, 64000ms)}, a, 3).age, 0ms) << "one of three alone decides nothing";
    EXPECT_EQ(youngest_agreeing_view({names(a, 64000ms), std::nullopt, std::nullopt}, a, 3).age, 0ms);
    EXPECT_EQ(youngest_agreeing_view({names(a, 64000ms), names(b, 9000ms)}, a, 3).age, 0ms)
        << "a sentinel naming another master does not agree";
    const Answers unreadable{names(a, 64000ms), SentinelAnswer{a, std::nullopt}};
    EXPECT_EQ(youngest_agreeing_view(unreadable, a, 3).age, 0ms) << "a view SENTINEL MASTER refused does not count";
}

TEST(SentinelViews, AMajorityDecidesAndItsNewestEpochIsReported) {
    const Answers answers{names(a, 40000ms, 5), std::nullopt, names(a, 35000ms, 4)};
    const MasterView v = youngest_agreeing_view(answers, a, 3);
    EXPECT_EQ(v.age, 35000ms);
    EXPECT_EQ(v.epoch, 5u);
    EXPECT_EQ(youngest_agreeing_view({names(a, 7000ms)}, a, 1).age, 7000ms) << "one sentinel configured: it is the majority";
    EXPECT_EQ(sentinel_majority(4), 3u);
}

// A fresh group grants at once: a majority at config epoch 0 has never seen a failover.
TEST(SentinelViews, AMajorityAtEpochZeroIsTheFirstTerm) {
    EXPECT_TRUE(youngest_agreeing_view({names(a, 10ms, 0), names(a, 20ms, 0), std::nullopt}, a, 3).first_term);
    EXPECT_FALSE(youngest_agreeing_view({names(a, 10ms, 0), names(a, 20ms, 1)}, a, 3).first_term)
        << "one sentinel saw a failover: the newest epoch counts";
    EXPECT_FALSE(youngest_agreeing_view({names(a, 10ms, 0), std::nullopt, std::nullopt}, a, 3).first_term)
        << "one of three alone proves nothing";
    EXPECT_FALSE(youngest_agreeing_view({names(a, 10ms, 0), names(b, 20ms, 0)}, a, 3).first_term)
        << "a sentinel naming another master does not agree";
    const Answers unreadable{names(a, 10ms, 0), SentinelAnswer{a, std::nullopt}};
    EXPECT_FALSE(youngest_agreeing_view(unreadable, a, 3).first_term);
}

}  // namespace
}  // namespace fencelock::detail
