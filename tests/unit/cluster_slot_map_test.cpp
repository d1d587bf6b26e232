// The slot map: built from CLUSTER SLOTS, corrected by MOVED.
#include "redis/cluster_slot_map.hpp"

#include <gtest/gtest.h>

#include "reply_builders.hpp"

namespace fencelock::detail {
namespace {

using test_support::A;
using test_support::I;
using test_support::S;

const ServerAddress seed{"127.0.0.1", 7000};

// The shape redis-server 7.0 answers: [first, last, [ip, port, id, {}], replica...].
Reply range(std::int64_t first, std::int64_t last, const std::string& ip, std::int64_t port) {
    return A({I(first), I(last), A({S(ip), I(port), S("id-" + std::to_string(port)), A({})}),
              A({S(ip), I(port + 100), S("replica"), A({})})});
}

TEST(SlotMap, ReadsClusterSlots) {
    auto map = SlotMap::from_cluster_slots(A({range(0, 5460, "127.0.0.1", 7000), range(5461, 10922, "127.0.0.1", 7001),
                                              range(10923, 16383, "127.0.0.1", 7002)}),
                                           seed);
    ASSERT_TRUE(map.has_value());
    EXPECT_TRUE(map->complete());
    EXPECT_EQ(map->master_of(0), (ServerAddress{"127.0.0.1", 7000}));
    EXPECT_EQ(map->master_of(5461), (ServerAddress{"127.0.0.1", 7001}));
    EXPECT_EQ(map->master_of(16383), (ServerAddress{"127.0.0.1", 7002}));
    EXPECT_EQ(map->masters().size(), 3u);
}

TEST(SlotMap, AMasterThatDoesNotKnowItsAddressIsTheNodeAsked) {
    auto map = SlotMap::from_cluster_slots(A({range(0, 16383, "", 7000)}), seed);
    ASSERT_TRUE(map.has_value());
    EXPECT_EQ(map->master_of(42), seed);
}

TEST(SlotMap, GapsAreNotComplete) {
    auto map = SlotMap::from_cluster_slots(A({range(0, 100, "127.0.0.1", 7000)}), seed);
    ASSERT_TRUE(map.has_value());
    EXPECT_FALSE(map->complete());
    EXPECT_EQ(map->master_of(101), std::nullopt);
    EXPECT_FALSE(SlotMap().complete());
}

TEST(SlotMap, MovedChangesOneSlotOnly) {
    auto map = SlotMap::from_cluster_slots(A({range(0, 16383, "127.0.0.1", 7000)}), seed);
    ASSERT_TRUE(map.has_value());
    map->moved(1029, {"127.0.0.1", 7005});
    EXPECT_EQ(map->master_of(1029), (ServerAddress{"127.0.0.1", 7005}));
    EXPECT_EQ(map->master_of(1028), seed);
    EXPECT_EQ(map->master_of(1030), seed);
    EXPECT_EQ(map->masters().size(), 2u);
}

TEST(SlotMap, RefusesOtherShapes) {
    EXPECT_FALSE(SlotMap::from_cluster_slots(S("nope"), seed));
    EXPECT_FALSE(SlotMap::from_cluster_slots(A({A({I(0), I(16384), A({S("h"), I(1)})})}), seed));
    EXPECT_FALSE(SlotMap::from_cluster_slots(A({A({I(10), I(5), A({S("h"), I(1)})})}), seed));
    EXPECT_FALSE(SlotMap::from_cluster_slots(A({A({I(0), I(5), A({S("h"), I(0)})})}), seed));
    EXPECT_FALSE(SlotMap::from_cluster_slots(A({A({I(0), I(5)})}), seed));
}

}  // namespace
}  // namespace fencelock::detail
