#pragma once
// The local line of threads waiting for one lock, woken one at a time by release messages.
//
// Why one at a time: every waiter that wakes for a release sends an attempt, and all but one
// fail. Waking only the longest-waiting thread that is not already awake gives the release to
// it, in arrival order, and keeps failed attempts near zero. Not thread-safe: the notifier
// guards it with its mutex.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>

#include "lease/replies.hpp"

namespace fencelock::detail {

/// What a release by this client needs to name a waiter its successor (release.lua ARGV[4..6])
/// and until when that waiter waits. Only a waiter that takes direct grants has them.
struct SuccessorTerms {
    std::chrono::milliseconds lease{0};
    std::chrono::milliseconds max_hold{0};
    std::chrono::steady_clock::time_point until{};  ///< its acquisition's deadline
};

class WaitLine {
public:
    using Ticket = std::uint64_t;

    /// Enters at the back. `tag` names the waiter for wake(tag) (its owner token); `terms`, if
    /// it takes direct grants.
    Ticket join(std::string tag = {}, std::optional<SuccessorTerms> terms = std::nullopt);
    /// The waiter a release by this client vouches for (its successor): the first that takes
    /// direct grants, holds no grant yet and still waits at least `margin` past `now`, so that
    /// it cannot give up while the release is on the wire. Its tag and terms, or nullopt.
    struct Named {
        std::string tag;
        SuccessorTerms terms;
    };
    std::optional<Named> successor(std::chrono::steady_clock::time_point now, std::chrono::milliseconds margin) const;
    /// Leaves (no-op for an unknown ticket).
    void leave(Ticket t);
    /// A release happened: wakes the first waiter not already woken and returns it.
    std::optional<Ticket> wake_next();
    /// Wakes the first waiter if it is not awake already, and returns it.
    std::optional<Ticket> wake_front();
    /// A release for one waiter (the first of Redis's fair line): wakes the waiter tagged
    /// `tag` if it is here and not already woken.
    std::optional<Ticket> wake(std::string_view tag);
    /// Hands a release on: wakes the first waiter behind `t` not already woken (the release
    /// was not `t`'s to take: an earlier fair waiter's turn).
    std::optional<Ticket> wake_after(Ticket t);
    /// A release granted the lease to the waiter tagged `tag` (a direct grant): keeps the grant
    /// for take_grant() (the newer one, should two arrive) and wakes it, awake or not.
    std::optional<Ticket> grant(std::string_view tag, const DirectGrant& g);
    /// Consumes the ticket's grant, if one came since the last call.
    std::optional<DirectGrant> take_grant(Ticket t);
    /// Wakes every waiter (release messages may have been missed: all must look for themselves).
    void wake_all();
    /// Consumes the ticket's wake-up: true if it had been woken since the last call.
    bool take_wake(Ticket t);
    /// Waiters in front of the ticket (0 for the head or an unknown ticket).
    std::size_t ahead(Ticket t) const;
    bool empty() const noexcept { return entries_.empty(); }
    std::size_t size() const noexcept { return entries_.size(); }

private:
    struct Entry {
        Ticket ticket;
        bool woken;
        std::string tag;
        std::optional<DirectGrant> grant{};
        std::optional<SuccessorTerms> terms{};
    };
    std::deque<Entry> entries_;
    Ticket next_ = 1;
};

}  // namespace fencelock::detail
