// The failover grace's age rule (redis/sentinel_views.hpp): the youngest view among a majority
// of sentinels naming the same master, so an answer that errs early cannot shorten the grace.
#include <gtest/gtest.h>

#include <string>

#include "redis/sentinel_views.hpp"

namespace fencelock::detail {
namespace {

using namespace std::chrono_literals;
using Answers = std::vector<std::optional<SentinelAnswer>>;

const ServerAddress a{"127.0.0.1", 7001};
const ServerAddress b{"127.0.0.1", 7002};

std::optional<SentinelAnswer> names(const ServerAddress& master, std::chrono::milliseconds age,
                                    std::uint64_t epoch = 3) {
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
    EXPECT_EQ(youngest_agreeing_view({names(a, 7000ms)}, a, 1).age, 7000ms)
        << "one sentinel configured: it is the majority";
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

// INFO texts as Redis 7.0.15 printed them (trimmed to the fields that matter, in their order).
std::string replication(std::string_view role, std::string_view replid2, std::string_view second_offset) {
    return "# Replication\r\nrole:" + std::string(role) +
           "\r\nconnected_slaves:1\r\nslave0:ip=127.0.0.1,port=7302,state=online,offset=42,lag=0\r\n"
           "master_failover_state:no-failover\r\nmaster_replid:8262492e895fb1ef12bc60216318fd3c0aed0d79\r\n"
           "master_replid2:" +
           std::string(replid2) + "\r\nmaster_repl_offset:42\r\nsecond_repl_offset:" + std::string(second_offset) +
           "\r\nrepl_backlog_active:1\r\n";
}
std::string persistence(std::string_view keys_loaded, std::string_view aof) {
    return "# Persistence\r\nloading:0\r\nasync_loading:0\r\nrdb_last_load_keys_expired:0\r\n"
           "rdb_last_load_keys_loaded:" +
           std::string(keys_loaded) + "\r\naof_enabled:" + std::string(aof) + "\r\naof_rewrite_in_progress:0\r\n";
}
constexpr std::string_view no_id = "0000000000000000000000000000000000000000";
constexpr std::string_view old_id = "35da832c97deb203fc0b5c92b72a4d4c2d478dce";

TEST(SentinelViews, AMasterStartedEmptyAndNeverPromotedIsFresh) {
    EXPECT_TRUE(started_fresh(replication("master", no_id, "-1"), persistence("0", "0")));
}

TEST(SentinelViews, AMasterPromotedSinceItStartedIsNotFresh) {
    // What REPLICAOF NO ONE left on 7.0.15 (Sentinel's promotion sends the same command).
    EXPECT_FALSE(started_fresh(replication("master", old_id, "1"), persistence("0", "0")));
}

TEST(SentinelViews, AMasterThatLoadedDataAtStartIsNotFresh) {
    // A restart from an RDB erases the promotion's evidence (observed on 7.0.15), so what it
    // loaded has to speak instead; an AOF of commands alone loads without counting keys.
    EXPECT_FALSE(started_fresh(replication("master", no_id, "-1"), persistence("1", "0")));
    EXPECT_FALSE(started_fresh(replication("master", no_id, "-1"), persistence("0", "1")));
}

TEST(SentinelViews, AnythingUnreadableIsNotFresh) {
    EXPECT_FALSE(started_fresh(replication("slave", no_id, "-1"), persistence("0", "0")));
    EXPECT_FALSE(started_fresh("", persistence("0", "0")));
    EXPECT_FALSE(started_fresh("NOPERM this user has no permissions to run the 'info' command", ""));
    // Redis 6.2 has no rdb_last_load_keys_loaded: it cannot say, so it is not fresh.
    EXPECT_FALSE(started_fresh(replication("master", no_id, "-1"), "# Persistence\r\nloading:0\r\naof_enabled:0\r\n"));
    // A field whose name ends like another's is not it.
    EXPECT_FALSE(started_fresh("# Replication\r\nrole:master\r\nxsecond_repl_offset:-1\r\n", persistence("0", "0")));
}

}  // namespace
}  // namespace fencelock::detail
