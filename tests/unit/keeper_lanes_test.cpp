#include "lease/keeper_lanes.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

// The keeper's grouping of kept leases into lanes (one per cluster node, one for a single
// server), fed the route of each lease as RenewalChannel::lane_of would give it (on a Redis
// Cluster: its key's slot's master, named "host:port").
namespace fencelock::detail {
namespace {

using Route = std::optional<LaneRoute>;
const Route a = LaneRoute{"10.0.0.1:7000"};
const Route b = LaneRoute{"10.0.0.2:7000"};
const Route a_other_port = LaneRoute{"10.0.0.1:7001"};
const Route no_route = std::nullopt;

/// Due leases (by name, with their key's route) as the keeper's sweep groups them: one batch
/// per lane index.
std::map<std::size_t, std::vector<std::string>> batches(KeeperLanes& lanes,
                                                        const std::vector<std::pair<std::string, Route>>& due) {
    std::map<std::size_t, std::vector<std::string>> out;
    for (const auto& [name, route] : due) out[lanes.lane_of(route).index].push_back(name);
    return out;
}

TEST(KeeperLanes, ASingleServerHasOneLaneWhateverTheRoute) {
    KeeperLanes lanes(true);
    EXPECT_TRUE(lanes.single());
    EXPECT_EQ(lanes.size(), 0u);
    EXPECT_EQ(lanes.lane_of(no_route), (KeeperLanes::Pick{0, true}));  // made by the keeper's constructor
    EXPECT_EQ(lanes.lane_of(a), (KeeperLanes::Pick{0, false}));
    EXPECT_EQ(lanes.lane_of(b), (KeeperLanes::Pick{0, false}));
    EXPECT_EQ(lanes.size(), 1u);
    EXPECT_EQ(lanes.node(0), no_route);
    EXPECT_TRUE(lanes.carries(0, a));
    EXPECT_TRUE(lanes.carries(0, no_route));
}

TEST(KeeperLanes, AClusterMakesOneLanePerNodeInTheOrderNodesAppear) {
    KeeperLanes lanes(false);
    EXPECT_FALSE(lanes.single());
    EXPECT_EQ(lanes.lane_of(no_route), (KeeperLanes::Pick{0, true}));  // before the map is loaded
    EXPECT_EQ(lanes.lane_of(b), (KeeperLanes::Pick{1, true}));
    EXPECT_EQ(lanes.lane_of(a), (KeeperLanes::Pick{2, true}));
    EXPECT_EQ(lanes.lane_of(b), (KeeperLanes::Pick{1, false}));
    EXPECT_EQ(lanes.lane_of(a_other_port), (KeeperLanes::Pick{3, true}));  // a node is its whole name
    EXPECT_EQ(lanes.lane_of(no_route), (KeeperLanes::Pick{0, false}));
    EXPECT_EQ(lanes.size(), 4u);
    EXPECT_EQ(lanes.node(0), no_route);
    EXPECT_EQ(lanes.node(1), b);
    EXPECT_EQ(lanes.node(2), a);
    EXPECT_EQ(lanes.node(3), a_other_port);
}

TEST(KeeperLanes, DueLeasesFormOneBatchPerNode) {
    KeeperLanes cluster(false);
    (void)cluster.lane_of(no_route);
    const auto grouped = batches(cluster, {{"x", a}, {"y", b}, {"z", a}, {"w", no_route}, {"v", b}});
    const std::map<std::size_t, std::vector<std::string>> expected{{0, {"w"}}, {1, {"x", "z"}}, {2, {"y", "v"}}};
    EXPECT_EQ(grouped, expected);

    KeeperLanes single(true);
    (void)single.lane_of(no_route);
    const auto one = batches(single, {{"x", a}, {"y", b}, {"z", no_route}});
    EXPECT_EQ(one, (std::map<std::size_t, std::vector<std::string>>{{0, {"x", "y", "z"}}}));
}

TEST(KeeperLanes, ALeaseWhoseSlotMovedBelongsToItsNewNodesLane) {
    KeeperLanes lanes(false);
    const auto first = lanes.lane_of(a).index;
    EXPECT_TRUE(lanes.carries(first, a));
    EXPECT_FALSE(lanes.carries(first, b));
    EXPECT_FALSE(lanes.carries(first, no_route));
    // The map moves the lease's slot from a to b: a's lane no longer carries it, and its next
    // batch goes to b's lane, made for it; a's lane stays (lanes never shrink).
    const auto moved = lanes.lane_of(b);
    EXPECT_TRUE(moved.made);
    EXPECT_NE(moved.index, first);
    EXPECT_TRUE(lanes.carries(moved.index, b));
    EXPECT_EQ(lanes.node(first), a);
    EXPECT_EQ(lanes.size(), 2u);
    // And back: a's old lane again, nothing new.
    EXPECT_EQ(lanes.lane_of(a), (KeeperLanes::Pick{first, false}));
}

TEST(KeeperLanes, AMapNotLoadedYetSharesTheLaneOfNoRoute) {
    KeeperLanes lanes(false);
    const auto none = lanes.lane_of(no_route).index;
    EXPECT_TRUE(lanes.carries(none, no_route));
    EXPECT_FALSE(lanes.carries(none, a));  // once the map routes it, it leaves that lane
    EXPECT_EQ(lanes.lane_of(a).index, 1u);
}

}  // namespace
}  // namespace fencelock::detail
