// parse_redis_url for the TLS schemes (rediss, rediss-sentinel, rediss-cluster) and unix://:
// what each turns on, which query keys each takes, and what redacted() shows.
#include "fencelock/redis_url.hpp"

#include <gtest/gtest.h>

#include <string>

namespace {

using fencelock::parse_redis_url;
using fencelock::RedisEndpoint;

TEST(RedisUrlTls, RedissTurnsTlsOnWithVerificationAndTheSystemStore) {
    const RedisEndpoint ep = parse_redis_url("rediss://app:pw@cache.example.com:6380/2").value();
    EXPECT_TRUE(ep.tls.enabled);
    EXPECT_FALSE(ep.tls.insecure);
    EXPECT_EQ(ep.tls.ca_file, "");
    EXPECT_EQ(ep.tls.ca_dir, "");
    EXPECT_EQ(ep.tls.server_name, "");
    EXPECT_EQ(ep.host, "cache.example.com");
    EXPECT_EQ(ep.port, 6380);
    EXPECT_EQ(ep.db, 2);
    EXPECT_EQ(ep.user, "app");
    EXPECT_FALSE(parse_redis_url("redis://h").value().tls.enabled);
}

TEST(RedisUrlTls, QueryOptionsArePercentDecoded) {
    const RedisEndpoint ep = parse_redis_url(
                                 "rediss://h?tls_ca=/etc/ssl/my%20ca.pem&tls_ca_dir=/etc/ssl/certs"
                                 "&tls_cert=/c.pem&tls_key=/k.pem&tls_server_name=redis.internal")
                                 .value();
    EXPECT_EQ(ep.tls.ca_file, "/etc/ssl/my ca.pem");
    EXPECT_EQ(ep.tls.ca_dir, "/etc/ssl/certs");
    EXPECT_EQ(ep.tls.cert_file, "/c.pem");
    EXPECT_EQ(ep.tls.key_file, "/k.pem");
    EXPECT_EQ(ep.tls.server_name, "redis.internal");
}

TEST(RedisUrlTls, InsecureTakesOneTrueZeroOrFalse) {
    EXPECT_TRUE(parse_redis_url("rediss://h?tls_insecure=1")->tls.insecure);
    EXPECT_TRUE(parse_redis_url("rediss://h?tls_insecure=true")->tls.insecure);
    EXPECT_FALSE(parse_redis_url("rediss://h?tls_insecure=0")->tls.insecure);
    EXPECT_FALSE(parse_redis_url("rediss://h?tls_insecure=false")->tls.insecure);
    EXPECT_FALSE(parse_redis_url("rediss://h?tls_insecure=yes").has_value());
}

TEST(RedisUrlTls, SentinelAndClusterTwinsCarryTls) {
    const RedisEndpoint s =
        parse_redis_url("rediss-sentinel://s1,s2:26380?sentinel_password=x&tls_ca=/ca.pem#mymaster").value();
    EXPECT_TRUE(s.tls.enabled);
    EXPECT_TRUE(s.uses_sentinel());
    EXPECT_EQ(s.sentinels.size(), 2U);
    EXPECT_EQ(s.master_name, "mymaster");
    EXPECT_EQ(s.tls.ca_file, "/ca.pem");
    const RedisEndpoint c = parse_redis_url("rediss-cluster://n1:7000,n2:7001?tls_ca=/ca.pem").value();
    EXPECT_TRUE(c.tls.enabled);
    EXPECT_TRUE(c.uses_cluster());
    EXPECT_EQ(c.cluster_seeds.size(), 2U);
}

TEST(RedisUrlTls, UnixSocketPathAndDb) {
    const RedisEndpoint ep = parse_redis_url("unix://app:pw@/run/redis/redis%20a.sock?db=3").value();
    EXPECT_TRUE(ep.uses_unix());
    EXPECT_EQ(ep.unix_path, "/run/redis/redis a.sock");
    EXPECT_EQ(ep.db, 3);
    EXPECT_EQ(ep.user, "app");
    EXPECT_EQ(ep.password, "pw");
    EXPECT_FALSE(ep.tls.enabled);
    EXPECT_EQ(parse_redis_url("unix:///tmp/r.sock")->unix_path, "/tmp/r.sock");
}

class RefusedTlsUrl : public ::testing::TestWithParam<const char*> {};

TEST_P(RefusedTlsUrl, IsAnErrorThatNamesTheProblemWithoutThePassword) {
    const auto r = parse_redis_url(GetParam());
    ASSERT_FALSE(r.has_value()) << GetParam();
    EXPECT_EQ(r.error().message.find("Pw0rdLeak"), std::string::npos) << r.error().message;
    EXPECT_NE(r.error().message.find("invalid Redis URL"), std::string::npos) << r.error().message;
}

INSTANTIATE_TEST_SUITE_P(
    TlsAndUnix, RefusedTlsUrl,
    ::testing::Values(
        // TLS options need a TLS scheme.
        "redis://u:Pw0rdLeak@h?tls_ca=/ca.pem", "redis-cluster://u:Pw0rdLeak@h?tls_insecure=1",
        "redis-sentinel://u:Pw0rdLeak@s?tls_ca=/ca.pem#m",
        // A key without its pair, unknown, repeated or empty.
        "rediss://u:Pw0rdLeak@h?tls_cert=/c.pem", "rediss://u:Pw0rdLeak@h?tls_key=/k.pem",
        "rediss://u:Pw0rdLeak@h?tls_bogus=1", "rediss://u:Pw0rdLeak@h?tls_ca=/a&tls_ca=/b",
        "rediss://u:Pw0rdLeak@h?tls_ca=", "rediss://u:Pw0rdLeak@h?tls_ca=/x%zz",
        // Sockets: a relative or missing path, a too-long path, TLS options, a host.
        "unix://u:Pw0rdLeak@relative.sock", "unix://", "unix:///", "unix:///tmp/r.sock?tls_ca=/ca.pem",
        "unix:///tmp/r.sock?db=x", "unix://host/tmp/r.sock",
        "unix:///tmp/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.sock",
        "rediss-cluster://u:Pw0rdLeak@h/1"));

TEST(RedisUrlTls, RedactedKeepsTheSchemeAndOptionsAndHidesThePassword) {
    const RedisEndpoint ep = parse_redis_url("rediss://app:Pw0rd%40Leak@h:6380?tls_ca=/ca.pem&tls_insecure=1").value();
    const std::string shown = ep.redacted();
    EXPECT_EQ(shown.find("Pw0rd"), std::string::npos) << shown;
    EXPECT_EQ(shown, "rediss://app:***@h:6380?tls_ca=/ca.pem&tls_insecure=1");
    EXPECT_EQ(parse_redis_url("unix:///tmp/r.sock?db=2")->redacted(), "unix:///tmp/r.sock?db=2");
    EXPECT_EQ(parse_redis_url("rediss-cluster://n1:7000")->redacted(), "rediss-cluster://n1:7000");
}

TEST(RedisUrlTls, RedactedParsesBackToTheSameTransport) {
    for (const char* url : {"rediss://h:6380/1?tls_ca=/ca.pem&tls_server_name=r.internal", "unix:///tmp/r.sock?db=4",
                            "rediss-sentinel://s1:26379?tls_insecure=1#m", "rediss-cluster://n1:7000,n2:7001"}) {
        const RedisEndpoint ep = parse_redis_url(url).value();
        const auto back = parse_redis_url(ep.redacted());
        ASSERT_TRUE(back.has_value()) << ep.redacted() << ": " << back.error().message;
        EXPECT_EQ(back->tls, ep.tls) << url;
        EXPECT_EQ(back->unix_path, ep.unix_path) << url;
        EXPECT_EQ(back->db, ep.db) << url;
    }
}

}  // namespace
