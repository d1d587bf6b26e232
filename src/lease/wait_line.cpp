#include "lease/wait_line.hpp"

#include <algorithm>
#include <utility>

namespace fencelock::detail {

WaitLine::Ticket WaitLine::join(std::string tag, std::optional<SuccessorTerms> terms) {
    entries_.push_back({next_, false, std::move(tag), std::nullopt, terms});
    return next_++;
}

std::optional<WaitLine::Named> WaitLine::successor(std::chrono::steady_clock::time_point now,
                                                   std::chrono::milliseconds margin) const {
    for (const auto& e : entries_)
        if (e.terms && !e.grant && e.terms->until - now >= margin) return Named{e.tag, *e.terms};
    return std::nullopt;
}

std::optional<WaitLine::Ticket> WaitLine::wake(std::string_view tag) {
    auto it = std::ranges::find(entries_, tag, &Entry::tag);
    if (it == entries_.end() || it->woken) return std::nullopt;
    it->woken = true;
    return it->ticket;
}

std::optional<WaitLine::Ticket> WaitLine::grant(std::string_view tag, const DirectGrant& g) {
    auto it = std::ranges::find(entries_, tag, &Entry::tag);
    if (it == entries_.end()) return std::nullopt;
    if (!it->grant || it->grant->fence < g.fence) it->grant = g;
    it->woken = true;
    return it->ticket;
}

std::optional<DirectGrant> WaitLine::take_grant(Ticket t) {
    auto it = std::ranges::find(entries_, t, &Entry::ticket);
    if (it == entries_.end() || !it->grant) return std::nullopt;
    return std::exchange(it->grant, std::nullopt);
}

void WaitLine::leave(Ticket t) {
    std::erase_if(entries_, [t](const Entry& e) { return e.ticket == t; });
}

std::optional<WaitLine::Ticket> WaitLine::wake_next() {
    auto it = std::ranges::find(entries_, false, &Entry::woken);
    if (it == entries_.end()) return std::nullopt;
    it->woken = true;
    return it->ticket;
}

std::optional<WaitLine::Ticket> WaitLine::wake_front() {
    if (entries_.empty() || entries_.front().woken) return std::nullopt;
    entries_.front().woken = true;
    return entries_.front().ticket;
}

std::optional<WaitLine::Ticket> WaitLine::wake_after(Ticket t) {
    auto it = std::ranges::find(entries_, t, &Entry::ticket);
    if (it == entries_.end()) return std::nullopt;
    it = std::find_if(it + 1, entries_.end(), [](const Entry& e) { return !e.woken; });
    if (it == entries_.end()) return std::nullopt;
    it->woken = true;
    return it->ticket;
}

void WaitLine::wake_all() {
    for (auto& e : entries_) e.woken = true;
}

bool WaitLine::take_wake(Ticket t) {
    auto it = std::ranges::find(entries_, t, &Entry::ticket);
    if (it == entries_.end() || !it->woken) return false;
    it->woken = false;
    return true;
}

std::size_t WaitLine::ahead(Ticket t) const {
    auto it = std::ranges::find(entries_, t, &Entry::ticket);
    return it == entries_.end() ? 0 : static_cast<std::size_t>(it - entries_.begin());
}

}  // namespace fencelock::detail
