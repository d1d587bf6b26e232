// parse_redis_url: what is accepted, what is refused, and that the password never leaks.
#include "fencelock/redis_url.hpp"

#include <gtest/gtest.h>

#include <string>

namespace {

using fencelock::parse_redis_url;
using fencelock::RedisEndpoint;

TEST(RedisUrl, DefaultsPortAndDb) {
    const RedisEndpoint ep = parse_redis_url("redis://cache.local").value();
    EXPECT_EQ(ep.host, "cache.local");
    EXPECT_EQ(ep.port, 6379);
    EXPECT_EQ(ep.db, 0);
    EXPECT_EQ(ep.user, "");
    EXPECT_EQ(ep.password, "");
}

TEST(RedisUrl, HostPortDb) {
    const RedisEndpoint ep = parse_redis_url("redis://10.0.0.5:6380/3").value();
    EXPECT_EQ(ep.host, "10.0.0.5");
    EXPECT_EQ(ep.port, 6380);
    EXPECT_EQ(ep.db, 3);
}

TEST(RedisUrl, EdgePortsAndEmptyPath) {
    EXPECT_EQ(parse_redis_url("redis://h:1").value().port, 1);
    EXPECT_EQ(parse_redis_url("redis://h:65535").value().port, 65535);
    EXPECT_EQ(parse_redis_url("redis://h/").value().db, 0);
    EXPECT_EQ(parse_redis_url("redis://h/15").value().db, 15);
}

TEST(RedisUrl, UserAndPassword) {
    const RedisEndpoint ep = parse_redis_url("redis://app:s3cret@h:7000/2").value();
    EXPECT_EQ(ep.user, "app");
    EXPECT_EQ(ep.password, "s3cret");
    EXPECT_EQ(ep.host, "h");
    EXPECT_EQ(ep.port, 7000);
    EXPECT_EQ(ep.db, 2);
    // The user:password part ends at the LAST '@' before the host: '@' and ':' may stay raw.
    const RedisEndpoint raw = parse_redis_url("redis://u:se@cr:et@h:7000").value();
    EXPECT_EQ(raw.password, "se@cr:et");
    EXPECT_EQ(raw.redacted(), "redis://u:***@h:7000");
}

TEST(RedisUrl, PasswordOnlyMeansDefaultUser) {
    const RedisEndpoint ep = parse_redis_url("redis://:hunter2@h").value();
    EXPECT_EQ(ep.user, "");
    EXPECT_EQ(ep.password, "hunter2");
}

TEST(RedisUrl, PercentDecodesUserAndPassword) {
    const RedisEndpoint ep = parse_redis_url("redis://me%40corp:p%40ss%3Aw%2f@h").value();
    EXPECT_EQ(ep.user, "me@corp");
    EXPECT_EQ(ep.password, "p@ss:w/");
    EXPECT_EQ(ep.host, "h");
}

TEST(RedisUrl, Ipv6) {
    const RedisEndpoint ep = parse_redis_url("redis://[::1]:6380/1").value();
    EXPECT_EQ(ep.host, "::1");
    EXPECT_EQ(ep.port, 6380);
    EXPECT_EQ(ep.db, 1);
    const RedisEndpoint bare = parse_redis_url("redis://[fe80::2]").value();
    EXPECT_EQ(bare.host, "fe80::2");
    EXPECT_EQ(bare.port, 6379);
}

// Malformed URLs; several carry the password "Pw0rdLeak" that must not reach the message.
class RedisUrlRejects : public ::testing::TestWithParam<const char*> {};

TEST_P(RedisUrlRejects, WithoutLeakingThePassword) {
    const auto r = parse_redis_url(GetParam());
    ASSERT_FALSE(r.has_value()) << "accepted " << GetParam();
    EXPECT_FALSE(r.error().message.empty());
    EXPECT_EQ(r.error().message.find("Pw0rdLeak"), std::string::npos) << r.error().message;
}

INSTANTIATE_TEST_SUITE_P(
    BadUrls, RedisUrlRejects,
    ::testing::Values("", "localhost:6379", "http://h", "REDIS://h", "redis:/h", "rediss://u:Pw0rdLeak@h?tls_bogus=1",
                      "redis://", "redis://:6379", "redis://u:Pw0rdLeak@", "redis://u:Pw0rdLeak@:6379", "redis://[]:1",
                      "redis://h:0", "redis://h:70000", "redis://h:abc", "redis://h:", "redis://h:-1", "redis://h:+80",
                      "redis://u:Pw0rdLeak@h:99999", "redis://u:Pw0rdLeak@h:port", "redis://h/x", "redis://h/-1",
                      "redis://h/1/2", "redis://u:Pw0rdLeak@h/db", "redis://user@h", "redis://u:@h", "redis://:@h",
                      "redis://h?db=1", "redis://u:Pw0rdLeak@h/0?timeout=1", "redis://h#frag", "redis://u:Pw0rdLeak?@h",
                      "redis://u:Pw0rd%zzLeak@h", "redis://u:Pw0rdLeak%4@h", "redis://u:Pw0rdLeak%@h", "redis://[::1",
                      "redis://[::1]x", "redis://[::1]:", "redis://u:Pw0rdLeak@[::1]:0",
                      // A raw '/' in the password ends the host part early: an '@' after it is refused.
                      "redis://u:Pw0rd/Leak@h", "redis://u:1/Pw0rdLeak@h", "redis://u:Pw0rdLeak@x/Pw0rdLeak@h",
                      // No '@': the would-be password lands where the port goes.
                      "redis://u:Pw0rdLeak"));

TEST(RedisUrl, RedactedHidesPassword) {
    for (const char* url :
         {"redis://app:Pw0rdLeak@h:7000/2", "redis://:Pw0rdLeak@h", "redis://app:Pw0rd%40Leak@[::1]:6380"}) {
        const RedisEndpoint ep = parse_redis_url(url).value();
        const std::string shown = ep.redacted();
        EXPECT_EQ(shown.find("Pw0rd"), std::string::npos) << shown;
        EXPECT_NE(shown.find("***"), std::string::npos) << shown;
    }
}

TEST(RedisUrl, RedactedShape) {
    EXPECT_EQ(parse_redis_url("redis://app:pw@h:7000/2")->redacted(), "redis://app:***@h:7000/2");
    EXPECT_EQ(parse_redis_url("redis://:pw@h")->redacted(), "redis://:***@h:6379");
    EXPECT_EQ(parse_redis_url("redis://h")->redacted(), "redis://h:6379");
    EXPECT_EQ(parse_redis_url("redis://[::1]:6380")->redacted(), "redis://[::1]:6380");
    EXPECT_EQ(RedisEndpoint{}.redacted(), "redis://127.0.0.1:6379");
}

TEST(RedisUrl, RedactedParsesBackToSameEndpointWithoutAuth) {
    for (const char* url : {"redis://h", "redis://h:7000/4", "redis://[::1]:6380/1"}) {
        const RedisEndpoint ep = parse_redis_url(url).value();
        const RedisEndpoint back = parse_redis_url(ep.redacted()).value();
        EXPECT_EQ(back.host, ep.host);
        EXPECT_EQ(back.port, ep.port);
        EXPECT_EQ(back.db, ep.db);
    }
}

}  // namespace
