// SubscriberPlan's timing: the pauses that keep a failing node or an unloadable slot map from
// being hammered, and the subscriber thread's sleep (subscriber_plan.hpp, "Timing").
#include <algorithm>

#include "coordinator/redis/subscriber_plan.hpp"

namespace fencelock::detail {

void SubscriberPlan::use_slot_map() noexcept { slot_map_ = map_wanted_ = true; }

void SubscriberPlan::map_stale() noexcept {
    if (slot_map_) map_wanted_ = true;
}

bool SubscriberPlan::map_load_due(time_point now) const noexcept { return map_wanted_ && now >= map_due_; }

std::vector<SubscriberPlan::Notify> SubscriberPlan::map_loaded(bool ok, time_point now) {
    if (ok) {
        map_wanted_ = false;
        map_due_ = now + reload_pause;
        return {};
    }
    // Still wanted; meanwhile waiters poll rather than wait for a confirmation that cannot come.
    map_due_ = unroutable_until_ = now + next_retry();
    return on_unroutable();
}

std::vector<SubscriberPlan::Notify> SubscriberPlan::node_down(
    const Node& node, time_point now, std::optional<std::chrono::milliseconds> reconnect_after) {
    const time_point until = now + (reconnect_after ? *reconnect_after : next_retry());
    auto it = std::ranges::find(offline_, node, &std::pair<Node, time_point>::first);
    if (it == offline_.end()) offline_.emplace_back(node, until);
    else it->second = until;
    map_stale();  // a master that failed may have been replaced
    return on_connection_lost(node);
}

bool SubscriberPlan::offline(const Node& node, time_point now) const {
    auto it = std::ranges::find(offline_, node, &std::pair<Node, time_point>::first);
    return it != offline_.end() && now < it->second;
}

bool SubscriberPlan::confirmation_possible(const std::optional<Node>& route, time_point now) const {
    return route ? !offline(*route, now) : now >= unroutable_until_;
}

std::optional<std::chrono::steady_clock::duration> SubscriberPlan::quiet_for(time_point now,
                                                                             bool follows_master) const {
    std::optional<std::chrono::steady_clock::duration> quiet;
    const auto until = [&](time_point t) {
        const auto d = std::max(t - now, std::chrono::steady_clock::duration::zero());
        quiet = std::min(quiet.value_or(d), d);
    };
    // An offline node matters only while someone waits for a channel it may serve.
    if (wanted())
        for (const auto& [node, t] : offline_)
            if (t > now) until(t);
    if (map_wanted_) until(map_due_);
    if (auto due = next_unsubscribe()) until(*due);
    if (follows_master) until(now + master_check);
    return quiet;
}

}  // namespace fencelock::detail
