#pragma once
// The asynchronous client's local lines: its acquisitions waiting for a lock, on its event loop.
//
// What they are for. The loop hears no release messages, but it hears its own releases: a
// release by this client grants the lease to its own waiter and says so in its reply
// (lib/handoff.lua). So a waiting acquisition joins the line of its resource and leaves its
// client id with its place; the release's reply hands the grant to it here, on the loop thread,
// without a message and without an attempt. A waiter whose lock is held by another client still
// polls with full-jitter backoff, since that holder's release only publishes a message.
//
// Which waits are "watched" (sleep until the holder's lease would end, not poll): those whose
// refused attempt saw a lease this client holds, by its fence. This client's release of that
// lease either grants to one of its waiters (told here) or frees the lock with nobody ours in
// Redis's line; a lease that expires instead wakes the waiter at its end, as on threads.
//
// Loop thread only: no locks. A waiter is called back (grant, wake) from here, so the calls
// are made after every lookup is done: a waiter may leave or join from inside them.
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "lease/replies.hpp"

namespace fencelock::detail {

/// One acquisition in a line: how the line reaches it.
class AsyncLineWaiter {
public:
    virtual ~AsyncLineWaiter() = default;
    /// A release by this client granted it the lease.
    virtual void granted(const DirectGrant& g) = 0;
    /// A wake-up handed on to it (the one in front will not use the release), or its client's
    /// release did not hand it the lock it waited for: it should attempt.
    virtual void woken() = 0;
    /// A release by this client named it its successor: a grant may come.
    virtual void named() = 0;
};

class AsyncWaitLines {
public:
    using clock = std::chrono::steady_clock;
    using Ticket = std::uint64_t;

    /// Enters the back of `channel`'s line as `owner`, asking for `lease` and `max_hold`, waiting
    /// until `until`; `ahead` receives the waiters in front.
    Ticket join(const std::string& channel, std::string owner, std::chrono::milliseconds lease,
                std::chrono::milliseconds max_hold, clock::time_point until, std::weak_ptr<AsyncLineWaiter> waiter,
                std::size_t& ahead);
    /// Leaves at `now` (no-op for an unknown ticket).
    void leave(const std::string& channel, Ticket t, clock::time_point now);
    /// Whether acquisitions of this client wait for `channel`.
    bool has_waiters(const std::string& channel) const;
    /// Whether some waited for `channel` within the last `linger` (a hot resource): a new one
    /// then joins before its first attempt, so that attempt already leaves a grantable place.
    bool waited_lately(const std::string& channel, clock::time_point now) const;

    /// A release by this client granted `g` to `owner`: calls its waiter back. False when no
    /// waiter of `channel` has that owner token (it finished or is giving up: see
    /// Coordinator::hand_over for why nothing else is needed).
    bool grant(const std::string& channel, std::string_view owner, const DirectGrant& g);
    /// Hands a wake-up on to the first waiter behind `t`, if any.
    void wake_after(const std::string& channel, Ticket t);

    /// The waiter a release of `channel` by this client names its successor, called back as
    /// named: the first (the line is served in order) that still waits at least `margin` past
    /// `now`, so that the release vouches for a waiter that cannot give up while it is on the
    /// wire (lib/handoff.lua); nullopt when nobody does.
    struct Successor {
        std::string owner;
        std::chrono::milliseconds lease;
        std::chrono::milliseconds max_hold;
    };
    std::optional<Successor> name_successor(const std::string& channel, clock::time_point now,
                                            std::chrono::milliseconds margin);
    /// After a release of `channel` by this client: if no lease of this client holds it any
    /// more, the front waiter, which may wait for a succession that will not come, attempts.
    void after_release(const std::string& channel);
    /// Until when at most this client holds `channel`'s lock (its latest lease's safe-until),
    /// or nullopt: then a new waiter waits for its release to name it instead of attempting.
    std::optional<clock::time_point> held_until(const std::string& channel);

    /// This client holds the lease of `channel` issued with `fence`, as `owner`, until at most
    /// `until` (its safe-until: it is forgotten then, released or not).
    void hold(const std::string& channel, std::string owner, std::uint64_t fence, clock::time_point until);
    /// This client releases `owner`'s lease of `channel`.
    void release(const std::string& channel, std::string_view owner);
    /// Whether a refused attempt that saw the holder's `fence` waits on a lease of this client;
    /// leases with older fences are forgotten (that holder's lease is over).
    bool held_here(const std::string& channel, std::uint64_t fence);

    static constexpr std::chrono::milliseconds linger{1000};

private:
    struct Entry {
        Ticket ticket;
        std::string owner;
        std::chrono::milliseconds lease;
        std::chrono::milliseconds max_hold;
        clock::time_point until;
        std::weak_ptr<AsyncLineWaiter> waiter;
    };
    struct Held {
        std::string owner;
        clock::time_point until;
    };
    struct Line {
        std::deque<Entry> entries;
        std::map<std::uint64_t, Held> held;  // by fence: leases this client holds
        clock::time_point last_left{};
    };
    using Lines = std::map<std::string, Line, std::less<>>;

    // Forgets what is over by `now` (held leases past their end, lines idle for `linger`), so
    // that a process touching many resources keeps no line of each.
    void purge(clock::time_point now);
    void tidy_at(clock::time_point when, const std::string& channel);

    Lines lines_;
    std::multimap<clock::time_point, std::string> tidy_;  // when a line may be forgotten
    Ticket next_ = 1;
};

}  // namespace fencelock::detail
