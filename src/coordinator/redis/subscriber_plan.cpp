#include "coordinator/redis/subscriber_plan.hpp"
#include "coordinator/redis/calls/grant_message.hpp"

#include <algorithm>

namespace fencelock::detail {

SubscriberPlan::Joined SubscriberPlan::join(const std::string& channel, std::string owner,
                                            std::optional<SuccessorTerms> terms) {
    auto& c = channels_[channel];
    const bool first = c.line.empty();
    return {c.line.join(std::move(owner), terms), first};
}

std::optional<WaitLine::Named> SubscriberPlan::successor(const std::string& channel, time_point now,
                                                         std::chrono::milliseconds margin) const {
    auto it = channels_.find(channel);
    if (it == channels_.end()) return std::nullopt;
    return it->second.line.successor(now, margin);
}

SubscriberPlan::Left SubscriberPlan::leave(const std::string& channel, Ticket t, bool granted, time_point now) {
    auto& c = channels_[channel];
    // A wake-up a waiter leaving without the lock did not use belongs to the next one.
    const bool unused_wake = c.line.take_wake(t) && !granted;
    const bool was_front = c.line.ahead(t) == 0;
    c.line.leave(t);
    std::optional<Ticket> wake;
    if (unused_wake) wake = c.line.wake_next();
    // The front of a local line is the waiter that attempts; those behind it may never have
    // (no place in Redis, so no mark on the lease: its release may send nothing). When the
    // front gives up without the lock, the new front must attempt, or it could sleep its whole
    // timer while the lock is free.
    else if (was_front && !granted) wake = c.line.wake_front();
    if (c.line.empty()) c.idle_since = now;
    return {wake, c.line.empty()};
}

std::optional<SubscriberPlan::Ticket> SubscriberPlan::pass_on(const std::string& channel, Ticket t) {
    return channels_[channel].line.wake_after(t);
}

bool SubscriberPlan::take_wake(const std::string& channel, Ticket t) { return channels_[channel].line.take_wake(t); }

std::optional<DirectGrant> SubscriberPlan::take_grant(const std::string& channel, Ticket t) {
    return channels_[channel].line.take_grant(t);
}

std::optional<SubscriberPlan::Ticket> SubscriberPlan::grant(const std::string& channel, std::string_view owner,
                                                            const DirectGrant& g) {
    auto it = channels_.find(channel);
    if (it == channels_.end()) return std::nullopt;
    return it->second.line.grant(owner, g);
}

std::size_t SubscriberPlan::ahead(const std::string& channel, Ticket t) { return channels_[channel].line.ahead(t); }

bool SubscriberPlan::confirmed(const std::string& channel) { return channels_[channel].confirmed; }

bool SubscriberPlan::confirmed_now(const std::string& channel) const {
    auto it = channels_.find(channel);
    return it != channels_.end() && it->second.confirmed;
}

std::optional<SubscriberPlan::time_point> SubscriberPlan::next_unsubscribe() const {
    std::optional<time_point> next;
    for (const auto& [name, c] : channels_)
        if (c.line.empty() && c.on_server)
            next = std::min(next.value_or(c.idle_since + linger_), c.idle_since + linger_);
    return next;
}

std::uint64_t SubscriberPlan::failures(const std::string& channel) { return channels_[channel].failures; }

bool SubscriberPlan::has_waiters(const std::string& channel) const {
    auto it = channels_.find(channel);
    return it != channels_.end() && !it->second.line.empty();
}

bool SubscriberPlan::wanted() const {
    return std::ranges::any_of(channels_, [](const auto& kv) { return !kv.second.line.empty(); });
}

SubscriberPlan::Link& SubscriberPlan::link(const Node& node) {
    auto it = std::ranges::find(links_, node, &Link::node);
    if (it == links_.end()) it = links_.insert(links_.end(), Link{node, {}});
    return *it;
}

std::vector<SubscriberPlan::Command> SubscriberPlan::commands(const Route& route, time_point now) {
    std::vector<Command> out;
    for (auto it = channels_.begin(); it != channels_.end();) {
        auto& c = it->second;
        if (!c.line.empty() && !c.on_server) {
            if (auto node = route(it->first)) {
                out.push_back({*node, "SSUBSCRIBE", it->first});
                link(*node).pending.push_back({true, it->first});
                c.node = *node;
                c.on_server = true;
            }
        } else if (c.line.empty() && c.on_server && now >= c.idle_since + linger_) {
            out.push_back({*c.node, "SUNSUBSCRIBE", it->first});
            link(*c.node).pending.push_back({false, it->first});
            c.on_server = false;
            c.confirmed = false;
        }
        // The links remember what each node still owes an answer for, so a channel nobody
        // waits for can go at once: a late acknowledgement cannot confirm a later subscription.
        if (c.line.empty() && !c.on_server) it = channels_.erase(it);
        else ++it;
    }
    return out;
}

SubscriberPlan::Reaction SubscriberPlan::on_reply(const Node& node, const Reply& reply) {
    if (reply.kind == Reply::Kind::error) return on_error(node, reply);
    if (reply.kind != Reply::Kind::array || reply.elements.size() < 2) return {};
    const std::string& payload = reply.elements.size() > 2 ? reply.elements[2].str : std::string{};
    Reaction reaction;
    reaction.notify = on_push(link(node), reply.elements[0].str, reply.elements[1].str, payload, reaction.reload_map);
    if (reaction.reload_map) map_stale();
    return reaction;
}

// An error answers the oldest command the node owes a reply (errors name no channel).
SubscriberPlan::Reaction SubscriberPlan::on_error(const Node& node, const Reply& error) {
    auto& l = link(node);
    std::optional<Pending> answered;
    if (!l.pending.empty()) {
        answered = std::move(l.pending.front());
        l.pending.pop_front();
    }
    if (auto redirect = parse_redirect(error.str, node); redirect && redirect->kind == Redirect::Kind::moved) {
        Reaction reaction{{}, std::nullopt, redirect, false};
        auto it = answered && answered->subscribe ? channels_.find(answered->channel) : channels_.end();
        // An answer to a subscription undone since teaches the map, nothing more.
        if (it == channels_.end() || it->second.node != node || !it->second.on_server) return reaction;
        auto& c = it->second;
        c.on_server = false;
        c.node.reset();  // the next commands() routes it by the corrected map
        // A map pointing in circles (slot owners still disagreeing): treat as a failing node.
        if (++c.redirects > max_redirects) {
            c.redirects = 0;
            reaction.reconnect_after = next_retry();
        }
        return reaction;
    }
    // NOPERM (an ACL user without channel permission) would come back at once: ask again only
    // after a long pause. Waiters poll meanwhile. Any other error (TRYAGAIN, CLUSTERDOWN...)
    // backs off.
    const bool refused = error.str.starts_with("NOPERM");
    return {{}, refused ? std::chrono::milliseconds(30'000) : next_retry(), std::nullopt, false};
}

std::vector<SubscriberPlan::Notify> SubscriberPlan::on_push(Link& link, const std::string& kind,
                                                            const std::string& name, const std::string& payload,
                                                            bool& reload_map) {
    auto it = channels_.find(name);
    Channel* c = it == channels_.end() ? nullptr : &it->second;
    const bool here = c && c->node == link.node && c->on_server;
    if (kind == "smessage") {
        // A message naming an owner is for the first fair waiter only (maybe in another
        // process); an empty one for whoever is first here. A grant is for its grantee only.
        if (!c) return {};
        if (is_grant_message(payload)) {
            const auto g = decode_grant_message(payload);
            if (auto ticket = g ? c->line.grant(g->owner, g->grant) : std::nullopt) return {{name, ticket}};
            return {};
        }
        if (auto ticket = payload.empty() ? c->line.wake_next() : c->line.wake(payload)) return {{name, ticket}};
    } else if (kind == "ssubscribe") {
        if (!link.pending.empty()) link.pending.pop_front();
        const bool sent_again =
            std::ranges::any_of(link.pending, [&](const Pending& p) { return p.subscribe && p.channel == name; });
        if (here && !sent_again && !c->confirmed) {
            c->confirmed = true;
            c->redirects = 0;
            retry_ = std::chrono::milliseconds(0);
            return {{name, std::nullopt}};
        }
    } else if (kind == "sunsubscribe") {
        const auto& p = link.pending;
        if (!p.empty() && !p.front().subscribe && p.front().channel == name) {
            link.pending.pop_front();  // the answer to our SUNSUBSCRIBE
        } else if (here) {
            // Unasked: the slot left this node (CLUSTER SETSLOT ... NODE, a failover). Its
            // releases are published elsewhere now.
            std::vector<Notify> out;
            lose(name, *c, out);
            reload_map = true;
            return out;
        }
    }
    return {};
}

void SubscriberPlan::lose(const std::string& name, Channel& c, std::vector<Notify>& out) {
    if (c.confirmed) c.line.wake_all();
    c.on_server = c.confirmed = false;
    out.push_back({name, std::nullopt});
}

std::vector<SubscriberPlan::Notify> SubscriberPlan::on_connection_lost(const Node& node) {
    std::erase_if(links_, [&](const Link& l) { return l.node == node; });
    std::vector<Notify> out;
    for (auto& [name, c] : channels_) {
        // Channels not placed yet may have been about to go there.
        if (c.node && c.node != node) continue;
        lose(name, c, out);
        c.node.reset();
        ++c.failures;
    }
    return out;
}

std::vector<SubscriberPlan::Notify> SubscriberPlan::on_unroutable() {
    std::vector<Notify> out;
    for (auto& [name, c] : channels_) {
        if (c.on_server || c.line.empty()) continue;
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
