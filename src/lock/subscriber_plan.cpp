#include "lock/subscriber_plan.hpp"

#include <algorithm>

namespace fencelock::detail {

SubscriberPlan::Joined SubscriberPlan::join(const std::string& channel, std::string owner) {
    auto& c = channels_[channel];
    const bool first = c.line.empty();
    return {c.line.join(std::move(owner)), first};
}

SubscriberPlan::Left SubscriberPlan::leave(const std::string& channel, Ticket t, bool granted) {
    auto& c = channels_[channel];
    // A wake-up a waiter leaving without the lock did not use belongs to the next one.
    const bool unused_wake = c.line.take_wake(t) && !granted;
    c.line.leave(t);
    std::optional<Ticket> wake;
    if (unused_wake) wake = c.line.wake_next();
    return {wake, c.line.empty()};
}

std::optional<SubscriberPlan::Ticket> SubscriberPlan::pass_on(const std::string& channel, Ticket t) {
    return channels_[channel].line.wake_after(t);
}

bool SubscriberPlan::take_wake(const std::string& channel, Ticket t) { return channels_[channel].line.take_wake(t); }

std::size_t SubscriberPlan::ahead(const std::string& channel, Ticket t) { return channels_[channel].line.ahead(t); }

bool SubscriberPlan::confirmed(const std::string& channel) { return channels_[channel].confirmed; }

std::uint64_t SubscriberPlan::failures(const std::string& channel) { return channels_[channel].failures; }

bool SubscriberPlan::has_waiters(const std::string& channel) const {
    auto it = channels_.find(channel);
    return it != channels_.end() && !it->second.line.empty();
}

bool SubscriberPlan::wanted() const {
    return std::ranges::any_of(channels_, [](const auto& kv) { return !kv.second.line.empty(); });
}

void SubscriberPlan::forget_idle_channels() {
    std::erase_if(channels_, [](const auto& kv) { return kv.second.line.empty(); });
}

std::vector<SubscriberPlan::Command> SubscriberPlan::commands() {
    std::vector<Command> out;
    for (auto it = channels_.begin(); it != channels_.end();) {
        auto& c = it->second;
        if (!c.line.empty() && !c.on_server) {
            out.push_back({"SUBSCRIBE", it->first});
            c.on_server = true;
            ++c.subscribes_sent;
        } else if (c.line.empty() && c.on_server) {
            out.push_back({"UNSUBSCRIBE", it->first});
            c.on_server = false;
            c.confirmed = false;
        }
        // Forget a channel only once its acknowledgements are in, so a late one cannot
        // confirm a later subscription too early.
        if (c.line.empty() && !c.on_server && c.subscribes_acked == c.subscribes_sent) it = channels_.erase(it);
        else ++it;
    }
    return out;
}

SubscriberPlan::Reaction SubscriberPlan::on_reply(const Reply& reply) {
    // An error answers a SUBSCRIBE. NOPERM (an ACL user without channel permission) would come
    // back at once: ask again only after a long pause. Waiters poll meanwhile.
    if (reply.kind == Reply::Kind::error) {
        const bool refused = reply.str.starts_with("NOPERM");
        return {{}, refused ? std::chrono::milliseconds(30'000) : next_retry()};
    }
    if (reply.kind != Reply::Kind::array || reply.elements.size() < 2) return {};
    const std::string& next = reply.elements.size() > 2 ? reply.elements[2].str : std::string{};
    return {on_push(reply.elements[0].str, reply.elements[1].str, next), std::nullopt};
}

std::vector<SubscriberPlan::Notify> SubscriberPlan::on_push(const std::string& kind, const std::string& name,
                                                            const std::string& next_owner) {
    auto it = channels_.find(name);
    if (it == channels_.end()) return {};
    auto& c = it->second;
    if (kind == "message") {
        // A message naming an owner is for the first fair waiter only (maybe in another
        // process); an empty one for whoever is first here.
        if (auto ticket = next_owner.empty() ? c.line.wake_next() : c.line.wake(next_owner)) return {{name, ticket}};
    } else if (kind == "subscribe") {
        ++c.subscribes_acked;
        if (c.on_server && c.subscribes_acked == c.subscribes_sent) {
            c.confirmed = true;
            retry_ = std::chrono::milliseconds(0);
            return {{name, std::nullopt}};
        }
    }
    return {};
}

std::vector<SubscriberPlan::Notify> SubscriberPlan::on_connection_lost() {
    std::vector<Notify> out;
    for (auto& [name, c] : channels_) {
        if (c.confirmed) c.line.wake_all();
        c.on_server = c.confirmed = false;
        c.subscribes_sent = c.subscribes_acked = 0;
        ++c.failures;
        out.push_back({name, std::nullopt});
    }
    return out;
}

std::chrono::milliseconds SubscriberPlan::next_retry() {
    retry_ = std::clamp(retry_ * 2, std::chrono::milliseconds(50), std::chrono::milliseconds(1000));
    return retry_;
}

}  // namespace fencelock::detail
