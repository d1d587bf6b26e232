// Error replies map to error codes, and every code to what the caller must do next.
#include "fencelock/error.hpp"

#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <system_error>

#include "redis/reply.hpp"

namespace {

using namespace fencelock;
using detail::error_from_reply;
using detail::reply_cause;
using detail::reply_detail;

std::error_code err(errc e) { return make_error_code(e); }

struct Case {
    const char* reply;
    errc expected;
};
void PrintTo(const Case& c, std::ostream* os) { *os << '"' << c.reply << '"'; }

class ErrorFromReply : public ::testing::TestWithParam<Case> {};

TEST_P(ErrorFromReply, Maps) { EXPECT_EQ(error_from_reply(GetParam().reply), err(GetParam().expected)); }

// Real messages from Redis 6/7, including errors raised inside our scripts.
INSTANTIATE_TEST_SUITE_P(
    RedisMessages, ErrorFromReply,
    ::testing::Values(
        Case{"LOADING Redis is loading the dataset in memory", errc::server_busy},
        Case{"BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.",
             errc::server_busy},
        Case{"READONLY You can't write against a read only replica.", errc::not_master},
        Case{"MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.", errc::not_master},
        Case{"TRYAGAIN Multiple keys request during rehashing of slot", errc::server_busy},
        Case{"CLUSTERDOWN The cluster is down", errc::server_busy},
        Case{"OOM command not allowed when used memory > 'maxmemory'.", errc::server_busy},
        Case{"WRONGPASS invalid username-password pair or user is disabled.", errc::auth_failed},
        Case{"NOAUTH Authentication required.", errc::auth_failed},
        // An ACL refusal, in Redis 7.0's words, then 7.2's: the NOPERM prefix decides.
        Case{"NOPERM this user has no permissions to run the 'evalsha' command", errc::auth_failed},
        Case{"NOPERM User reader has no permissions to run the 'evalsha' command", errc::auth_failed},
        Case{"NOPERM this user has no permissions to access one of the keys used as arguments", errc::auth_failed},
        Case{"NOPERM No permissions to access a key", errc::auth_failed},
        Case{"NOPERM No permissions to access a channel", errc::auth_failed},
        Case{"ERR invalid password", errc::auth_failed},
        // A command inside a script refused by ACL: Redis 7.0's words, then 7.2's.
        Case{"ERR Error running script (call to f_8f1e2c): @user_script:3: The user executing the script can't "
             "run this command or subcommand script: 8f1e2c, on @user_script:3.",
             errc::auth_failed},
        Case{"ERR ACL failure in script: this user has no permissions to run the 'exists' command script: 8f1e2c, "
             "on @user_script:3.",
             errc::auth_failed},
        Case{"WRONGTYPE Operation against a key holding the wrong kind of value", errc::corrupt_key},
        Case{"ERR value is not an integer or out of range", errc::corrupt_key},
        Case{"WRONGTYPE Operation against a key holding the wrong kind of value script: "
             "8f1e2c, on @user_script:20.",
             errc::corrupt_key},
        Case{"ERR user_script:24: attempt to perform arithmetic on a nil value script: 8f1e2c, "
             "on @user_script:24.",
             errc::corrupt_key},
        Case{"ERR Error running script (call to f_8f1e2c): @user_script:20: @user_script: 20: "
             "-ERR value is not an integer or out of range",
             errc::corrupt_key},
        Case{"ERR fencelock: fence counter fence:{r} is exhausted (2^53 - 1) script: 8f1e2c, on @user_script:17.",
             errc::fence_exhausted},
        Case{"ERR fencelock: fence counter fence:{r} is not an integer: repair it by hand script: 8f1e2c, on "
             "@user_script:14.",
             errc::corrupt_key},
        Case{"ERR unknown command 'EVALSHA'", errc::protocol_error},
        Case{"MOVED 3999 127.0.0.1:6381", errc::protocol_error}, Case{"", errc::protocol_error}));

TEST(ErrorFromReplyCause, ACommandAScriptWasRefusedIsNoperm) {
    EXPECT_EQ(reply_cause("ERR ACL failure in script: this user has no permissions to run the 'exists' command"),
              "noperm");
    EXPECT_EQ(reply_cause("ERR Error running script (call to f_1): @user_script:3: The user executing the script "
                          "can't run this command or subcommand"),
              "noperm");
    EXPECT_EQ(reply_cause("ERR Error running script (call to f_1): @user_script:3: -ERR value is not an integer"), "");
}

// The cause rests on the NOPERM prefix, not on the words after it, which Redis 7.2 changed.
TEST(ErrorFromReplyCause, AnAclRefusalIsNopermInRedis70sAndRedis72sWords) {
    for (const char* reply : {"NOPERM this user has no permissions to run the 'evalsha' command",
                              "NOPERM User reader has no permissions to run the 'evalsha' command",
                              "NOPERM this user has no permissions to access one of the keys used as arguments",
                              "NOPERM No permissions to access a key", "NOPERM No permissions to access a channel"})
        EXPECT_EQ(reply_cause(reply), "noperm") << reply;
}

// A redis:// URL at a cluster node or at a replica: the cause is named and the detail says
// what to use instead.
TEST(ErrorFromReplyCause, AServerOfTheWrongKindIsNamedWithWhatToUseInstead) {
    EXPECT_EQ(reply_cause("MOVED 3999 127.0.0.1:6381"), "cluster_node");
    EXPECT_EQ(reply_cause("ASK 3999 127.0.0.1:6381"), "cluster_node");
    EXPECT_EQ(reply_cause("READONLY You can't write against a read only replica. script: 8f1e2c, on @user_script:30."),
              "read_only_replica");
    EXPECT_NE(reply_detail("MOVED 3999 127.0.0.1:6381").find("use a redis-cluster:// URL"), std::string::npos);
    const std::string replica = reply_detail("READONLY You can't write against a read only replica.");
    EXPECT_NE(replica.find("read-only replica"), std::string::npos) << replica;
    EXPECT_NE(replica.find("redis-sentinel://"), std::string::npos) << replica;
    EXPECT_EQ(reply_detail("WRONGTYPE Operation against a key"), "WRONGTYPE Operation against a key");
}

TEST(ErrorFromReplyPrefix, OtherCodesStartingWithBusyAreNotServerBusy) {
    // Regression: BUSYKEY and BUSYGROUP (XGROUP CREATE of an existing group) were matched as
    // BUSY, i.e. retryable, and a caller would retry forever.
    EXPECT_NE(error_from_reply("BUSYKEY Target key name already exists."), err(errc::server_busy));
    EXPECT_NE(error_from_reply("BUSYGROUP Consumer Group name already exists"), err(errc::server_busy));
}

TEST(Classify, EachCode) {
    EXPECT_EQ(classify(err(errc::unavailable)), failure_kind::retryable);
    EXPECT_EQ(classify(err(errc::server_busy)), failure_kind::retryable);
    EXPECT_EQ(classify(err(errc::reply_timeout)), failure_kind::outcome_unknown);
    EXPECT_EQ(classify(err(errc::connection_lost)), failure_kind::outcome_unknown);
    EXPECT_EQ(classify(err(errc::auth_failed)), failure_kind::fatal);
    EXPECT_EQ(classify(err(errc::corrupt_key)), failure_kind::fatal);
    EXPECT_EQ(classify(err(errc::protocol_error)), failure_kind::fatal);
}

TEST(Classify, ReplyToAction) {
    // The whole path a script error takes: Redis message -> code -> what to do.
    EXPECT_EQ(classify(error_from_reply("LOADING Redis is loading")), failure_kind::retryable);
    EXPECT_EQ(classify(error_from_reply("READONLY You can't write")), failure_kind::retryable);
    EXPECT_EQ(classify(error_from_reply("WRONGTYPE Operation against a key")), failure_kind::fatal);
    EXPECT_EQ(classify(error_from_reply("ERR value is not an integer or out of range")), failure_kind::fatal);
    EXPECT_EQ(classify(error_from_reply("WRONGPASS invalid username-password pair")), failure_kind::fatal);
}

TEST(Classify, ForeignAndUnknownCodesAreFatal) {
    EXPECT_EQ(classify(std::make_error_code(std::errc::timed_out)), failure_kind::fatal);
    EXPECT_EQ(classify(std::make_error_code(std::errc::connection_refused)), failure_kind::fatal);
    EXPECT_EQ(classify(std::error_code{}), failure_kind::fatal);
    EXPECT_EQ(classify(std::error_code(0, error_category())), failure_kind::fatal);
    EXPECT_EQ(classify(std::error_code(99, error_category())), failure_kind::fatal);
}

TEST(ErrorCategory, NameMessagesAndEnumConversion) {
    EXPECT_STREQ(error_category().name(), "fencelock");
    const std::error_code ec = errc::corrupt_key;  // implicit, via is_error_code_enum
    EXPECT_EQ(&ec.category(), &error_category());
    for (int v = 1; v <= static_cast<int>(errc::fence_exhausted); ++v) {
        const std::string m = error_category().message(v);
        EXPECT_FALSE(m.empty());
        EXPECT_NE(m, "unknown fencelock error") << v;
    }
    EXPECT_EQ(error_category().message(99), "unknown fencelock error");
    EXPECT_NE(err(errc::reply_timeout).message(), err(errc::connection_lost).message());
}

TEST(FailureKind, StableNames) {
    EXPECT_EQ(to_string(failure_kind::retryable), "retryable");
    EXPECT_EQ(to_string(failure_kind::outcome_unknown), "outcome_unknown");
    EXPECT_EQ(to_string(failure_kind::fatal), "fatal");
}

}  // namespace
