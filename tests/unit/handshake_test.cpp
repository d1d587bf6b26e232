// The connection handshake as pure code: which steps go out, and how their replies decide.
#include <gtest/gtest.h>

#include "fencelock/error.hpp"
#include "redis/handshake.hpp"

namespace fencelock::detail {
namespace {

Reply config_reply(std::string policy) {
    return Reply::make_array({Reply::make_string("maxmemory-policy"), Reply::make_string(std::move(policy))});
}
Reply info_reply(std::string policy) {
    return Reply::make_string("# Memory\r\nused_memory:1\r\nmaxmemory_policy:" + policy +
                              "\r\nallocator_frag_ratio:1\r\n");
}
const Reply ok{Reply::Kind::status, 0, "OK", {}};
const Reply time_reply = Reply::make_array({Reply::make_string("1700000000"), Reply::make_string("5")});

TEST(Handshake, StepsAreAuthSelectThenThePolicyUnlessAllowed) {
    RedisEndpoint ep{.db = 3, .user = "u", .password = "p"};
    auto steps = handshake_steps(ep);
    ASSERT_EQ(steps.size(), 5u);
    EXPECT_EQ(steps[0].argv, (std::vector<std::string>{"AUTH", "u", "p"}));
    EXPECT_EQ(steps[1].argv, (std::vector<std::string>{"SELECT", "3"}));
    EXPECT_EQ(steps[2].argv, (std::vector<std::string>{"CONFIG", "GET", "maxmemory-policy"}));
    EXPECT_EQ(steps[3].argv, (std::vector<std::string>{"INFO", "memory"}));
    EXPECT_EQ(steps[4].argv, (std::vector<std::string>{"TIME"}));
    ep.allow_eviction = true;
    EXPECT_EQ(handshake_steps(ep).size(), 3u) << "AUTH, SELECT, TIME";
    EXPECT_TRUE(handshake_steps(RedisEndpoint{.allow_eviction = true}).empty());
}

TEST(Handshake, PolicyIsReadFromConfigOrInfo) {
    EXPECT_EQ(policy_in_config(config_reply("allkeys-lru")), "allkeys-lru");
    EXPECT_EQ(policy_in_config(Reply::make_error("NOPERM this user has no permissions")), std::nullopt);
    EXPECT_EQ(policy_in_config(Reply::make_array({})), std::nullopt);
    EXPECT_EQ(policy_in_info(info_reply("volatile-ttl")), "volatile-ttl");
    EXPECT_EQ(policy_in_info(Reply::make_string("# Memory\r\nxmaxmemory_policy:noeviction\r\n")), std::nullopt);
    EXPECT_EQ(policy_in_info(Reply::make_error("NOPERM")), std::nullopt);
}

TEST(Handshake, OnlyNoevictionPasses) {
    const auto steps = handshake_steps(RedisEndpoint{});
    EXPECT_FALSE(
        judge_handshake(steps, std::vector<Reply>{config_reply("noeviction"), info_reply("noeviction"), time_reply}));
    // CONFIG decides when it answers; INFO when CONFIG is refused.
    EXPECT_FALSE(judge_handshake(steps, std::vector<Reply>{Reply::make_error("ERR unknown command 'CONFIG'"),
                                                           info_reply("noeviction"), time_reply}));
    const auto refused =
        judge_handshake(steps, std::vector<Reply>{Reply::make_error("NOPERM"), info_reply("allkeys-lfu"), time_reply});
    EXPECT_EQ(&refused.category(), &eviction_category());
    EXPECT_NE(refused.message().find("maxmemory-policy is allkeys-lfu"), std::string::npos) << refused.message();
    const auto blind = judge_handshake(
        steps, std::vector<Reply>{Reply::make_error("NOPERM"), Reply::make_error("NOPERM"), time_reply});
    EXPECT_TRUE(blind) << "a refusal must be an error (non-zero value)";
    EXPECT_EQ(&blind.category(), &eviction_category());
    EXPECT_NE(blind.message().find("could not learn"), std::string::npos);
    const auto odd =
        judge_handshake(steps, std::vector<Reply>{config_reply("some-future-policy"), info_reply("x"), time_reply});
    EXPECT_EQ(&odd.category(), &eviction_category());
    EXPECT_EQ(classify(odd), failure_kind::fatal);
}

TEST(Handshake, AuthAndSelectFailuresComeFirst) {
    const auto steps = handshake_steps(RedisEndpoint{.db = 2, .password = "p"});
    const Reply noauth = Reply::make_error("NOAUTH Authentication required.");
    EXPECT_EQ(judge_handshake(steps, std::vector<Reply>{Reply::make_error("WRONGPASS invalid username-password pair"),
                                                        noauth, noauth, noauth, time_reply}),
              make_error_code(errc::auth_failed));
    EXPECT_EQ(
        judge_handshake(steps, std::vector<Reply>{ok, Reply::make_error("ERR DB index is out of range"),
                                                  config_reply("noeviction"), info_reply("noeviction"), time_reply}),
        make_error_code(errc::protocol_error));
    EXPECT_FALSE(judge_handshake(
        steps, std::vector<Reply>{ok, ok, config_reply("noeviction"), info_reply("noeviction"), time_reply}));
}

// TIME goes last and only reports: the server's clock offset at connect, never a failure.
TEST(Handshake, TimeGoesLastGivesTheClockOffsetAndNeverFailsTheConnection) {
    const auto steps = handshake_steps(RedisEndpoint{});
    ASSERT_EQ(steps.back().kind, HandshakeStep::Kind::clock);
    const std::vector<Reply> refused{
        config_reply("noeviction"), info_reply("noeviction"),
        Reply::make_error("NOPERM this user has no permissions to run the 'time' command")};
    EXPECT_FALSE(judge_handshake(steps, refused));
    const std::vector<Reply> replies{config_reply("noeviction"), info_reply("noeviction"), time_reply};
    const auto server =
        std::chrono::system_clock::time_point(std::chrono::seconds(1'700'000'000)) + std::chrono::microseconds(5);
    EXPECT_EQ(clock_offset_in(steps, replies, server - std::chrono::seconds(60)), std::chrono::seconds(60));
    EXPECT_EQ(clock_offset_in(steps, replies, server), std::chrono::microseconds(0));
    EXPECT_EQ(clock_offset_in(steps, refused, server), std::nullopt);
}

}  // namespace
}  // namespace fencelock::detail
