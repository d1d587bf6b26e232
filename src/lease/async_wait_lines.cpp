#include "lease/async_wait_lines.hpp"

#include <algorithm>
#include <vector>

namespace fencelock::detail {

AsyncWaitLines::Ticket AsyncWaitLines::join(const std::string& channel, std::string owner,
                                            std::chrono::milliseconds lease, std::chrono::milliseconds max_hold,
                                            clock::time_point until, std::weak_ptr<AsyncLineWaiter> waiter,
                                            std::size_t& ahead) {
    Line& line = lines_[channel];
    ahead = line.entries.size();
    line.entries.push_back({next_, std::move(owner), lease, max_hold, until, std::move(waiter)});
    return next_++;
}

std::optional<AsyncWaitLines::Successor> AsyncWaitLines::name_successor(const std::string& channel,
                                                                        clock::time_point now,
                                                                        std::chrono::milliseconds margin) {
    auto it = lines_.find(channel);
    if (it == lines_.end()) return std::nullopt;
    const auto& entries = it->second.entries;
    const auto named = std::ranges::find_if(entries, [&](const Entry& e) { return e.until - now >= margin; });
    if (named == entries.end()) return std::nullopt;
    Successor s{named->owner, named->lease, named->max_hold};
    if (auto waiter = named->waiter.lock()) waiter->named();  // after the copy: it may act
    return s;
}

void AsyncWaitLines::after_release(const std::string& channel) {
    std::shared_ptr<AsyncLineWaiter> waiter;
    if (auto it = lines_.find(channel); it != lines_.end()) {
        const auto now = clock::now();
        std::erase_if(it->second.held, [now](const auto& h) { return h.second.until <= now; });
        if (it->second.held.empty() && !it->second.entries.empty()) waiter = it->second.entries.front().waiter.lock();
    }
    if (waiter) waiter->woken();
}

std::optional<AsyncWaitLines::clock::time_point> AsyncWaitLines::held_until(const std::string& channel) {
    auto it = lines_.find(channel);
    if (it == lines_.end()) return std::nullopt;
    const auto now = clock::now();
    std::optional<clock::time_point> until;
    for (const auto& [fence, h] : it->second.held)
        if (h.until > now && (!until || h.until > *until)) until = h.until;
    return until;
}

void AsyncWaitLines::leave(const std::string& channel, Ticket t, clock::time_point now) {
    auto it = lines_.find(channel);
    if (it == lines_.end()) return;
    auto& entries = it->second.entries;
    std::erase_if(entries, [t](const Entry& e) { return e.ticket == t; });
    if (entries.empty()) {
        it->second.last_left = now;
        tidy_at(now + linger, channel);
    }
    purge(now);
}

bool AsyncWaitLines::has_waiters(const std::string& channel) const {
    auto it = lines_.find(channel);
    return it != lines_.end() && !it->second.entries.empty();
}

bool AsyncWaitLines::waited_lately(const std::string& channel, clock::time_point now) const {
    auto it = lines_.find(channel);
    if (it == lines_.end()) return false;
    return !it->second.entries.empty() ||
           (it->second.last_left != clock::time_point{} && now < it->second.last_left + linger);
}

bool AsyncWaitLines::grant(const std::string& channel, std::string_view owner, const DirectGrant& g) {
    std::shared_ptr<AsyncLineWaiter> waiter;
    if (auto it = lines_.find(channel); it != lines_.end()) {
        auto& entries = it->second.entries;
        auto e = std::ranges::find(entries, owner, &Entry::owner);
        if (e != entries.end()) waiter = e->waiter.lock();
    }
    if (!waiter) return false;
    waiter->granted(g);  // after the lookup: it may leave the line from inside
    return true;
}

void AsyncWaitLines::wake_after(const std::string& channel, Ticket t) {
    std::shared_ptr<AsyncLineWaiter> waiter;
    if (auto it = lines_.find(channel); it != lines_.end()) {
        auto& entries = it->second.entries;
        auto e = std::ranges::find(entries, t, &Entry::ticket);
        if (e != entries.end() && ++e != entries.end()) waiter = e->waiter.lock();
    }
    if (waiter) waiter->woken();
}

void AsyncWaitLines::hold(const std::string& channel, std::string owner, std::uint64_t fence, clock::time_point until) {
    const auto now = clock::now();
    purge(now);
    lines_[channel].held[fence] = {std::move(owner), until};
    tidy_at(until, channel);
}

void AsyncWaitLines::release(const std::string& channel, std::string_view owner) {
    auto it = lines_.find(channel);
    if (it == lines_.end()) return;
    std::erase_if(it->second.held, [owner](const auto& h) { return h.second.owner == owner; });
}

bool AsyncWaitLines::held_here(const std::string& channel, std::uint64_t fence) {
    auto it = lines_.find(channel);
    if (it == lines_.end()) return false;
    auto& held = it->second.held;
    held.erase(held.begin(), held.lower_bound(fence));  // older holders' leases are over
    auto h = held.find(fence);
    return h != held.end() && clock::now() < h->second.until;
}

void AsyncWaitLines::tidy_at(clock::time_point when, const std::string& channel) { tidy_.emplace(when, channel); }

void AsyncWaitLines::purge(clock::time_point now) {
    while (!tidy_.empty() && tidy_.begin()->first <= now) {
        auto it = lines_.find(tidy_.begin()->second);
        tidy_.erase(tidy_.begin());
        if (it == lines_.end()) continue;
        Line& line = it->second;
        std::erase_if(line.held, [now](const auto& h) { return h.second.until <= now; });
        if (line.entries.empty() && line.held.empty() && now >= line.last_left + linger) lines_.erase(it);
    }
}

}  // namespace fencelock::detail
