#pragma once
// The release notifier's decisions, with no I/O: which channels to SUBSCRIBE or UNSUBSCRIBE
// given who waits, what a message or acknowledgement from the server means, whom to wake, and
// what a lost connection undoes. The notifier's thread sends what commands() returns, feeds
// every push reply to on_reply() and every lost connection to on_connection_lost(), and
// notifies the threads named in the answers. Not thread-safe: the notifier guards it.
//
// Why a waiter may rely on a subscription only once it is confirmed: a release published
// before Redis processed the SUBSCRIBE is never delivered. Acknowledgements are counted per
// channel, so a late one for an earlier, undone subscription cannot confirm a later one.
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lock/wait_line.hpp"
#include "redis/reply.hpp"

namespace fencelock::detail {

class SubscriberPlan {
public:
    using Ticket = WaitLine::Ticket;

    struct Command {
        std::string verb;  ///< SUBSCRIBE or UNSUBSCRIBE
        std::string channel;
    };
    /// Threads to notify: the waiter `only`, or (nullopt) every thread waiting on `channel`, so
    /// each looks again at the state it waits for.
    struct Notify {
        std::string channel;
        std::optional<Ticket> only;
        friend bool operator==(const Notify&, const Notify&) = default;
    };
    struct Reaction {
        std::vector<Notify> notify;
        /// Set when the reply ends the connection: reconnect no sooner than this.
        std::optional<std::chrono::milliseconds> reconnect_after;
    };
    struct Joined {
        Ticket ticket;
        bool first;  ///< the channel had no waiter: the subscriber has work
    };
    struct Left {
        std::optional<Ticket> wake;  ///< a wake-up the leaver did not use, handed on
        bool last;                   ///< the channel has no waiter left
    };

    /// Enters the back of `channel`'s line as `owner`.
    Joined join(const std::string& channel, std::string owner);
    /// Leaves; `granted`: the waiter got the lock, so a wake-up it did not consume stays unused.
    Left leave(const std::string& channel, Ticket t, bool granted);
    /// The release that woke `t` was not its to take: the next waiter behind it to wake.
    std::optional<Ticket> pass_on(const std::string& channel, Ticket t);
    /// Consumes `t`'s wake-up: true if a release (or a lost subscription) woke it.
    bool take_wake(const std::string& channel, Ticket t);
    std::size_t ahead(const std::string& channel, Ticket t);

    /// The subscription stands and no release on `channel` can go unseen.
    bool confirmed(const std::string& channel);
    /// Connection losses seen by `channel`: a waiter for a confirmation stops at a change.
    std::uint64_t failures(const std::string& channel);
    bool has_waiters(const std::string& channel) const;
    /// Some channel has waiters: the subscriber needs a connection.
    bool wanted() const;
    /// Without a connection nothing is subscribed and nothing owed: forget channels nobody
    /// waits for (commands() does this while connected).
    void forget_idle_channels();

    /// The commands that bring the server's subscriptions in line with the waiters; counts
    /// them as sent.
    std::vector<Command> commands();
    /// A reply on the subscriber connection: a release message, an acknowledgement, an error.
    Reaction on_reply(const Reply& reply);
    /// The subscriptions are gone: releases may go unseen, so waiters that relied on one look
    /// for themselves; waiters for a confirmation stop waiting. A reconnect resubscribes all.
    std::vector<Notify> on_connection_lost();
    /// The pause before the next connection attempt: 50 ms doubling to 1 s, back to the start
    /// only once a subscription was confirmed, so a server that accepts and then closes the
    /// connection is not hammered.
    std::chrono::milliseconds next_retry();

private:
    struct Channel {
        WaitLine line;
        bool on_server = false;  // SUBSCRIBE sent and not undone
        bool confirmed = false;  // ...and acknowledged: from here on no release goes unseen
        unsigned subscribes_sent = 0;
        unsigned subscribes_acked = 0;
        std::uint64_t failures = 0;
    };

    std::vector<Notify> on_push(const std::string& kind, const std::string& name, const std::string& next_owner);

    std::map<std::string, Channel, std::less<>> channels_;
    std::chrono::milliseconds retry_{0};
};

}  // namespace fencelock::detail
