// Key names: lock:{R} and fence:{R} must always land in the same Redis Cluster slot.
#include "coordinator/redis/keys.hpp"

#include <gtest/gtest.h>

#include <string>

namespace {

using fencelock::ResourceName;
using fencelock::detail::make_keys;
using namespace std::string_literals;

// Redis Cluster's rule (cluster spec, "hash tags"): if the key has a '{' and a '}' after it
// with at least one byte between, only that substring is hashed; otherwise the whole key.
std::string cluster_hash_tag(const std::string& key) {
    const auto open = key.find('{');
    if (open == std::string::npos) return key;
    const auto close = key.find('}', open + 1);
    if (close == std::string::npos || close == open + 1) return key;
    return key.substr(open + 1, close - open - 1);
}

TEST(ClusterHashTagHelper, FollowsTheSpec) {
    // The helper is itself a test oracle, so pin it to the spec's own examples.
    EXPECT_EQ(cluster_hash_tag("{user1000}.following"), "user1000");
    EXPECT_EQ(cluster_hash_tag("foo{}{bar}"), "foo{}{bar}");
    EXPECT_EQ(cluster_hash_tag("foo{{bar}}zap"), "{bar");
    EXPECT_EQ(cluster_hash_tag("foo{bar}{zap}"), "bar");
    EXPECT_EQ(cluster_hash_tag("plain"), "plain");
}

TEST(MakeKeys, Shape) {
    const auto keys = make_keys("", ResourceName::make("order-42").value());
    EXPECT_EQ(keys.lock, "lock:{order-42}");
    EXPECT_EQ(keys.fence, "fence:{order-42}");
}

TEST(MakeKeys, PrefixIsPrepended) {
    const auto keys = make_keys("billing:", ResourceName::make("inv 7").value());
    EXPECT_EQ(keys.lock, "billing:lock:{inv 7}");
    EXPECT_EQ(keys.fence, "billing:fence:{inv 7}");
}

TEST(MakeKeys, KeepsNulBytes) {
    const auto keys = make_keys("", ResourceName::make("a\0b"s).value());
    EXPECT_EQ(keys.lock, "lock:{a\0b}"s);
}

TEST(MakeKeys, BothKeysShareTheHashTag) {
    for (const std::string& name : {"order-42"s, "a{b"s, "a}b"s, "{x}"s, "{"s, "x}"s, "{}"s, "a b c"s, "{{}}"s, "a{}b"s,
                                    "caf\xC3\xA9"s, " leading space"s}) {
        const auto resource = ResourceName::make(name);
        ASSERT_TRUE(resource.has_value()) << name;
        for (const char* prefix : {"", "app:", "a b:"}) {
            const auto keys = make_keys(prefix, *resource);
            const std::string tag = cluster_hash_tag(keys.lock);
            EXPECT_EQ(tag, cluster_hash_tag(keys.fence)) << keys.lock << " / " << keys.fence;
            // The tag is a real tag, not the whole key (which would differ between the two).
            EXPECT_NE(tag, keys.lock) << keys.lock;
        }
    }
}

}  // namespace
