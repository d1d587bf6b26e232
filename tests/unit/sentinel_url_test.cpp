// parse_redis_url on redis-sentinel:// URLs: the sentinel list, the master name, sentinel
// credentials, and that neither password ever reaches a message or redacted().
#include "fencelock/redis_url.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

using fencelock::HostAndPort;
using fencelock::parse_redis_url;
using fencelock::RedisEndpoint;

TEST(SentinelUrl, SentinelListAndMasterName) {
    const RedisEndpoint ep = parse_redis_url("redis-sentinel://s1:26380,10.0.0.2,[::1]:5000#cache").value();
    EXPECT_TRUE(ep.uses_sentinel());
    EXPECT_EQ(ep.sentinels, (std::vector<HostAndPort>{{"s1", 26380}, {"10.0.0.2", 26379}, {"::1", 5000}}));
    EXPECT_EQ(ep.master_name, "cache");
    EXPECT_EQ(ep.db, 0);
    EXPECT_EQ(ep.password, "");
    EXPECT_EQ(ep.sentinel_password, "");
    // host:port name the first sentinel, so option checks of a plain endpoint still pass.
    EXPECT_EQ(ep.host, "s1");
    EXPECT_EQ(ep.port, 26380);
}

TEST(SentinelUrl, PlainUrlIsNoSentinelEndpoint) {
    const RedisEndpoint ep = parse_redis_url("redis://h:7000").value();
    EXPECT_FALSE(ep.uses_sentinel());
    EXPECT_TRUE(ep.master_name.empty());
}

TEST(SentinelUrl, MasterCredentialsAndDb) {
    const RedisEndpoint ep = parse_redis_url("redis-sentinel://app:p%40ss@s1:1,s2:2/3#my%20master").value();
    EXPECT_EQ(ep.user, "app");
    EXPECT_EQ(ep.password, "p@ss");
    EXPECT_EQ(ep.db, 3);
    EXPECT_EQ(ep.master_name, "my master");
    EXPECT_EQ(ep.sentinel_password, "");  // the master's credentials are not the sentinels'
}

TEST(SentinelUrl, SentinelCredentialsInTheQuery) {
    const RedisEndpoint ep =
        parse_redis_url("redis-sentinel://:m@s1/1?sentinel_user=watch%2Fer&sentinel_password=s%23cret#g").value();
    EXPECT_EQ(ep.password, "m");
    EXPECT_EQ(ep.sentinel_user, "watch/er");
    EXPECT_EQ(ep.sentinel_password, "s#cret");
    EXPECT_EQ(ep.db, 1);
    EXPECT_EQ(ep.master_name, "g");
    const RedisEndpoint only_password = parse_redis_url("redis-sentinel://s1?sentinel_password=x#g").value();
    EXPECT_EQ(only_password.sentinel_user, "");
    EXPECT_EQ(only_password.sentinel_password, "x");
}

TEST(SentinelUrl, FailoverGraceDefaultsToTheDefaultLeaseAndIsSetInTheQuery) {
    EXPECT_EQ(parse_redis_url("redis-sentinel://s1#g")->failover_grace, std::chrono::seconds(30));
    EXPECT_EQ(parse_redis_url("redis-sentinel://s1?failover_grace=2500ms#g")->failover_grace,
              std::chrono::milliseconds(2500));
    EXPECT_EQ(parse_redis_url("redis-sentinel://s1?failover_grace=0#g")->failover_grace,
              std::chrono::milliseconds::zero());
    const RedisEndpoint both = parse_redis_url("redis-sentinel://s1?sentinel_password=x&failover_grace=1m#g").value();
    EXPECT_EQ(both.failover_grace, std::chrono::minutes(1));
    EXPECT_EQ(both.sentinel_password, "x");
}

TEST(SentinelUrl, AConfirmedFirstTermGrantsAtOnceUnlessTurnedOff) {
    const RedisEndpoint by_default = parse_redis_url("redis-sentinel://s1#g").value();
    EXPECT_TRUE(by_default.trust_first_term);
    EXPECT_EQ(by_default.redacted().find("trust_first_term"), std::string::npos) << by_default.redacted();
    const RedisEndpoint off = parse_redis_url("redis-sentinel://s1?trust_first_term=0#g").value();
    EXPECT_FALSE(off.trust_first_term);
    EXPECT_NE(off.redacted().find("trust_first_term=0"), std::string::npos) << off.redacted();
    EXPECT_TRUE(parse_redis_url("redis-sentinel://s1?trust_first_term=1#g")->trust_first_term);
}

class SentinelUrlRejects : public ::testing::TestWithParam<const char*> {};

TEST_P(SentinelUrlRejects, WithoutLeakingAPassword) {
    const auto r = parse_redis_url(GetParam());
    ASSERT_FALSE(r.has_value()) << "accepted " << GetParam();
    EXPECT_FALSE(r.error().message.empty());
    EXPECT_EQ(r.error().message.find("Pw0rdLeak"), std::string::npos) << r.error().message;
}

INSTANTIATE_TEST_SUITE_P(BadUrls, SentinelUrlRejects,
                         ::testing::Values(
                             // No master name, or an empty one.
                             "redis-sentinel://s1:26379", "redis-sentinel://s1:26379#",
                             "redis-sentinel://u:Pw0rdLeak@s1", "redis-sentinel://s1#bad%zz",
                             // Empty host list or an empty entry in it.
                             "redis-sentinel://#g", "redis-sentinel:///1#g", "redis-sentinel://u:Pw0rdLeak@#g",
                             "redis-sentinel://s1,#g", "redis-sentinel://,s1#g", "redis-sentinel://s1,,s2#g",
                             "redis-sentinel://:26379#g",
                             // Bad ports.
                             "redis-sentinel://s1:0#g", "redis-sentinel://s1:70000#g", "redis-sentinel://s1:x#g",
                             "redis-sentinel://s1:#g", "redis-sentinel://s1,s2:-1#g", "redis-sentinel://[::1#g",
                             // Bad db, credentials, query.
                             "redis-sentinel://s1/x#g", "redis-sentinel://user@s1#g", "redis-sentinel://u:@s1#g",
                             "redis-sentinel://s1?sentinel_user=u#g", "redis-sentinel://s1?sentinel_password=#g",
                             "redis-sentinel://s1?timeout=1#g", "redis-sentinel://s1?sentinel_password=Pw0rdLeak&x=1#g",
                             "redis-sentinel://s1?sentinel_password=a&sentinel_password=Pw0rdLeak#g",
                             "redis-sentinel://s1?sentinel_password=Pw0rd%zzLeak#g", "redis-sentinel://s1?a?b#g",
                             "redis-sentinel://u:Pw0rd/Leak@s1#g", "REDIS-SENTINEL://s1#g", "redis-sentinel:/s1#g",
                             // Bad failover grace: no unit, negative, too long, repeated.
                             "redis-sentinel://s1?failover_grace=30#g", "redis-sentinel://s1?failover_grace=-1s#g",
                             "redis-sentinel://s1?failover_grace=25h#g", "redis-sentinel://s1?failover_grace=#g",
                             "redis-sentinel://s1?failover_grace=1s&failover_grace=2s&sentinel_password=Pw0rdLeak#g",
                             // trust_first_term takes 1 or 0, once; only sentinel URLs know it. The old opt-in's
                             // name is unknown now (it trusted epoch 0 without the master's word).
                             "redis-sentinel://s1?trust_first_term=no#g",
                             "redis-sentinel://s1?trust_first_term=0&trust_first_term=0#g",
                             "redis://h:6379?trust_first_term=0", "redis-sentinel://s1?trust_epoch_zero=1#g"));

TEST(SentinelUrl, RedactedHidesBothPasswords) {
    const RedisEndpoint ep =
        parse_redis_url("redis-sentinel://app:Pw0rdLeak@s1:1,[::1]:2/4?sentinel_user=w&sentinel_password=Pw0rdLeak#g")
            .value();
    EXPECT_EQ(ep.redacted(), "redis-sentinel://app:***@s1:1,[::1]:2/4?sentinel_user=w&sentinel_password=***#g");
    EXPECT_EQ(parse_redis_url("redis-sentinel://s1#g")->redacted(), "redis-sentinel://s1:26379#g");
    EXPECT_EQ(parse_redis_url("redis-sentinel://s1?failover_grace=0&sentinel_password=Pw0rdLeak#g")->redacted(),
              "redis-sentinel://s1:26379?sentinel_password=***&failover_grace=0#g");
}

TEST(SentinelUrl, RedactedParsesBackToTheSameSentinels) {
    for (const char* url :
         {"redis-sentinel://s1#g", "redis-sentinel://a:1,b:2/3#my%20group",
          "redis-sentinel://[::1]:5,h?sentinel_password=x#g", "redis-sentinel://h?failover_grace=3s#g"}) {
        const RedisEndpoint ep = parse_redis_url(url).value();
        const RedisEndpoint back = parse_redis_url(ep.redacted()).value();
        EXPECT_EQ(back.sentinels, ep.sentinels) << url;
        EXPECT_EQ(back.master_name, ep.master_name) << url;
        EXPECT_EQ(back.db, ep.db) << url;
        EXPECT_EQ(back.failover_grace, ep.failover_grace) << url;
    }
}

}  // namespace
