// parse_redis_url on redis-cluster:// URLs: the seed list, credentials, and what is refused.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fencelock/redis_url.hpp"

namespace {

using fencelock::HostAndPort;
using fencelock::parse_redis_url;
using fencelock::RedisEndpoint;

TEST(ClusterUrl, SeedList) {
    const RedisEndpoint ep = parse_redis_url("redis-cluster://n1:7000,10.0.0.2,[::1]:7002").value();
    EXPECT_TRUE(ep.uses_cluster());
    EXPECT_FALSE(ep.uses_sentinel());
    EXPECT_EQ(ep.cluster_seeds, (std::vector<HostAndPort>{{"n1", 7000}, {"10.0.0.2", 6379}, {"::1", 7002}}));
    EXPECT_EQ(ep.host, "n1");  // the first seed, so option checks of a plain endpoint still pass
    EXPECT_EQ(ep.port, 7000);
    EXPECT_EQ(ep.db, 0);
}

TEST(ClusterUrl, CredentialsApplyToEveryNode) {
    const RedisEndpoint ep = parse_redis_url("redis-cluster://app:p%40ss@n1:7000,n2:7001").value();
    EXPECT_EQ(ep.user, "app");
    EXPECT_EQ(ep.password, "p@ss");
    EXPECT_EQ(ep.redacted(), "redis-cluster://app:***@n1:7000,n2:7001");
}

TEST(ClusterUrl, OtherSchemesAreNoClusterEndpoint) {
    EXPECT_FALSE(parse_redis_url("redis://h:7000").value().uses_cluster());
    EXPECT_FALSE(parse_redis_url("redis-sentinel://s:1#m").value().uses_cluster());
}

class ClusterUrlRejects : public ::testing::TestWithParam<const char*> {};

TEST_P(ClusterUrlRejects, WithAReasonAndWithoutThePassword) {
    const auto r = parse_redis_url(GetParam());
    ASSERT_FALSE(r.has_value()) << GetParam();
    EXPECT_FALSE(r.error().message.empty());
    EXPECT_EQ(r.error().message.find("s3cret"), std::string::npos) << r.error().message;
}

INSTANTIATE_TEST_SUITE_P(Bad, ClusterUrlRejects,
                         ::testing::Values("redis-cluster://", "redis-cluster://:s3cret@", "redis-cluster://n1,,n2",
                                           "redis-cluster://n1:0", "redis-cluster://n1:70000",
                                           "redis-cluster://:s3cret@n1:7000/1", "redis-cluster://n1?x=s3cret",
                                           "redis-cluster://n1#s3cret", "redis-cluster://u@n1", "redis-clusters://n1"));

TEST(ClusterUrl, ADatabaseIsRefusedWithTheReason) {
    const auto r = parse_redis_url("redis-cluster://n1:7000/2");
    ASSERT_FALSE(r.has_value());
    EXPECT_NE(r.error().message.find("database 0"), std::string::npos) << r.error().message;
}

}  // namespace
