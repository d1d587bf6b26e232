// The handshake of a connection that follows a master (Sentinel): ROLE goes out after AUTH and
// SELECT, and anything but master fails the connection; a sentinel reached through redis://
// is recognised by its replies.
#include <gtest/gtest.h>

#include "fencelock/error.hpp"
#include "redis/handshake.hpp"

namespace fencelock::detail {
namespace {

const Reply ok{Reply::Kind::status, 0, "OK", {}};
Reply config_noeviction() {
    return Reply::make_array({Reply::make_string("maxmemory-policy"), Reply::make_string("noeviction")});
}
Reply time_now() { return Reply::make_array({Reply::make_string("1700000000"), Reply::make_string("0")}); }
Reply info_noeviction() { return Reply::make_string("# Memory\r\nmaxmemory_policy:noeviction\r\n"); }
Reply role(std::string name, std::vector<Reply> rest = {}) {
    rest.insert(rest.begin(), Reply::make_string(std::move(name)));
    return Reply::make_array(std::move(rest));
}

TEST(HandshakeRole, RoleFollowsAuthAndSelectOnlyWhenAsked) {
    const RedisEndpoint ep{.db = 2, .password = "p"};
    const auto steps = handshake_steps(ep, {.confirm_master = true});
    ASSERT_EQ(steps.size(), 6u);
    EXPECT_EQ(steps[0].kind, HandshakeStep::Kind::auth);
    EXPECT_EQ(steps[1].kind, HandshakeStep::Kind::select);
    EXPECT_EQ(steps[2].argv, (std::vector<std::string>{"ROLE"}));
    EXPECT_EQ(steps[3].kind, HandshakeStep::Kind::config_policy);
    for (const auto& step : handshake_steps(ep)) EXPECT_NE(step.kind, HandshakeStep::Kind::role);
}

TEST(HandshakeRole, OnlyAMasterPasses) {
    const auto steps = handshake_steps(RedisEndpoint{}, {.confirm_master = true});
    ASSERT_EQ(steps.size(), 4u);
    auto judge = [&](Reply role_reply) {
        const std::vector<Reply> replies{std::move(role_reply), config_noeviction(), info_noeviction(), time_now()};
        return judge_handshake(steps, replies);
    };
    EXPECT_EQ(judge(role("master", {Reply::make_integer(42), Reply::make_array({})})), std::error_code{});
    // Redis 7's answers on a replica and on a sentinel.
    EXPECT_EQ(judge(role("slave", {Reply::make_string("127.0.0.1"), Reply::make_integer(6379),
                                   Reply::make_string("connected"), Reply::make_integer(42)})),
              make_error_code(errc::not_master));
    EXPECT_EQ(judge(role("sentinel", {Reply::make_array({Reply::make_string("fencelock")})})),
              make_error_code(errc::not_master));
    EXPECT_EQ(judge(Reply::make_nil()), make_error_code(errc::not_master));
    EXPECT_EQ(judge(Reply::make_error("NOAUTH Authentication required.")), make_error_code(errc::auth_failed));
    EXPECT_EQ(classify(make_error_code(errc::not_master)), failure_kind::retryable);
}

TEST(HandshakeRole, ASentinelBehindRedisUrlIsNamed) {
    const auto steps = handshake_steps(RedisEndpoint{});
    // What a Redis 7 sentinel answers to CONFIG GET and INFO memory.
    const std::vector<Reply> sentinel{
        Reply::make_error("ERR unknown command 'CONFIG', with args beginning with: 'GET' 'maxmemory-policy' "),
        Reply::make_string(""), Reply::make_error("ERR unknown command 'TIME'")};
    EXPECT_EQ(judge_handshake(steps, sentinel), make_error_code(errc::is_sentinel));
    // A server with CONFIG renamed away still reports its memory: the policy decides.
    const std::vector<Reply> renamed{
        Reply::make_error("ERR unknown command 'CONFIG', with args beginning with: 'GET' 'maxmemory-policy' "),
        info_noeviction(), time_now()};
    EXPECT_EQ(judge_handshake(steps, renamed), std::error_code{});
    EXPECT_EQ(classify(make_error_code(errc::is_sentinel)), failure_kind::fatal);
}

}  // namespace
}  // namespace fencelock::detail
