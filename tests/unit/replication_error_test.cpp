// Refusals of replicated Redis (NOREPLICAS, READONLY, MASTERDOWN, LOADING, TRYAGAIN) are
// retryable and named, also when a write inside one of our scripts raised them: before, the
// script's "user_script" suffix made them corrupt_key, a fatal "unexpected type".
#include <gtest/gtest.h>

#include <string>
#include <system_error>

#include "fencelock/error.hpp"
#include "redis/reply.hpp"

namespace {

using namespace fencelock;
using detail::asks_for_another_server;
using detail::error_from_reply;
using detail::Reply;

std::error_code err(errc e) { return make_error_code(e); }

// Shapes Redis 7.0 sends; the script forms are what EVALSHA of acquire.lua returns.
constexpr const char* noreplicas_in_script =
    "NOREPLICAS Not enough good replicas to write. script: 5b8a0f3c2e, on @user_script:41.";
constexpr const char* readonly_in_script =
    "READONLY You can't write against a read only replica. script: 5b8a0f3c2e, on @user_script:41.";
// Redis 6 wraps an error of redis.call in ERR Error running script.
constexpr const char* noreplicas_redis6 =
    "ERR Error running script (call to f_5b8a0f3c2e): @user_script:41: @user_script: 41: -NOREPLICAS Not enough "
    "good replicas to write.";

TEST(ReplicationErrors, NamedCodes) {
    EXPECT_EQ(error_from_reply("NOREPLICAS Not enough good replicas to write."), err(errc::replicas_unavailable));
    EXPECT_EQ(error_from_reply(noreplicas_in_script), err(errc::replicas_unavailable));
    EXPECT_EQ(error_from_reply(noreplicas_redis6), err(errc::replicas_unavailable));
    EXPECT_EQ(error_from_reply(readonly_in_script), err(errc::not_master));
    EXPECT_EQ(error_from_reply("MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'. "
                               "script: 5b8a0f3c2e, on @user_script:3."),
              err(errc::not_master));
    EXPECT_EQ(error_from_reply("LOADING Redis is loading the dataset in memory script: 5b8a0f3c2e, on "
                               "@user_script:3."),
              err(errc::server_busy));
    EXPECT_EQ(error_from_reply("TRYAGAIN Multiple keys request during rehashing of slot"), err(errc::server_busy));
}

TEST(ReplicationErrors, RetryableAndNeverCorruptKey) {
    for (const char* m : {noreplicas_in_script, readonly_in_script, noreplicas_redis6,
                          "MASTERDOWN Link with MASTER is down", "LOADING Redis is loading", "TRYAGAIN x"}) {
        const std::error_code ec = error_from_reply(m);
        EXPECT_NE(ec, err(errc::corrupt_key)) << m;
        EXPECT_EQ(classify(ec), failure_kind::retryable) << m;
        EXPECT_EQ(ec.message().find("unexpected type"), std::string::npos) << m;
    }
}

TEST(ReplicationErrors, MessagesNameTheRefusal) {
    EXPECT_NE(err(errc::replicas_unavailable).message().find("NOREPLICAS"), std::string::npos);
    EXPECT_NE(err(errc::not_master).message().find("READONLY"), std::string::npos);
    EXPECT_NE(err(errc::not_master).message().find("MASTERDOWN"), std::string::npos);
    EXPECT_NE(err(errc::server_busy).message().find("LOADING"), std::string::npos);
    EXPECT_NE(err(errc::server_busy).message().find("TRYAGAIN"), std::string::npos);
    EXPECT_NE(err(errc::failover_grace).message().find("failover_grace"), std::string::npos);
}

TEST(ReplicationErrors, FailoverGraceIsRetryable) {
    EXPECT_EQ(classify(err(errc::failover_grace)), failure_kind::retryable);
}

TEST(ReplicationErrors, ScriptFailuresOnOurKeysStayCorruptKey) {
    // The same suffix with a code that is ours to worry about.
    EXPECT_EQ(error_from_reply("WRONGTYPE Operation against a key holding the wrong kind of value script: 5b8a0f3c2e, "
                               "on @user_script:20."),
              err(errc::corrupt_key));
    EXPECT_EQ(error_from_reply("ERR user_script:24: attempt to perform arithmetic on a nil value script: 5b8a0f3c2e"),
              err(errc::corrupt_key));
}

TEST(ReplicationErrors, WhichRepliesSendAConnectionElsewhere) {
    EXPECT_TRUE(asks_for_another_server(Reply::make_error(readonly_in_script)));
    EXPECT_TRUE(asks_for_another_server(Reply::make_error("MASTERDOWN Link with MASTER is down")));
    EXPECT_TRUE(asks_for_another_server(Reply::make_error("LOADING Redis is loading the dataset in memory")));
    // Inside EXEC's array too.
    EXPECT_TRUE(asks_for_another_server(
        Reply::make_array({Reply::make_integer(1), Reply::make_error("READONLY You can't write")})));
    // The master itself refusing: staying is right.
    EXPECT_FALSE(asks_for_another_server(Reply::make_error(noreplicas_in_script)));
    EXPECT_FALSE(asks_for_another_server(Reply::make_error("BUSY Redis is busy running a script.")));
    EXPECT_FALSE(asks_for_another_server(Reply::make_error("READONLYX not a code of ours")));
    EXPECT_FALSE(asks_for_another_server(Reply::make_string("READONLY")));
    EXPECT_FALSE(asks_for_another_server(Reply::make_nil()));
}

}  // namespace
