#include "lease/keeper_lanes.hpp"

#include <algorithm>

namespace fencelock::detail {

KeeperLanes::Pick KeeperLanes::lane_of(const std::optional<LaneRoute>& route) {
    // A single server ignores routes (there are none): its one lane is the lane of no route.
    const std::optional<LaneRoute> node = single_ ? std::nullopt : route;
    if (const auto it = std::ranges::find(nodes_, node); it != nodes_.end())
        return {static_cast<std::size_t>(it - nodes_.begin()), false};
    nodes_.push_back(node);
    return {nodes_.size() - 1, true};
}

bool KeeperLanes::carries(std::size_t index, const std::optional<LaneRoute>& route) const {
    return single_ || nodes_.at(index) == route;
}

}  // namespace fencelock::detail
