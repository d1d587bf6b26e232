#pragma once
// The release notifier's decisions, with no I/O: which channels to SSUBSCRIBE or SUNSUBSCRIBE
// on which node given who waits, what a message, acknowledgement, redirect or error from a
// node means, whom to wake, and what a lost connection undoes. The notifier's thread sends what
// commands() returns, feeds every reply of a node's subscriber connection to on_reply() and
// every lost connection to on_connection_lost(), and notifies the threads named in the
// answers. Not thread-safe: the notifier guards it.
//
// Sharded pub/sub (Redis 7) on every topology: the release script SPUBLISHes on the node that
// owns its slot, and that node delivers only to its own subscribers. So a channel is
// subscribed on the master of its slot (a single server or Sentinel's master is the one node,
// Node{}), and it follows the slot: a MOVED answer re-routes it, and the `sunsubscribe` a node
// sends unasked when the slot leaves it (a reshard, a failover) is a lost subscription.
//
// Why a waiter may rely on a subscription only once it is confirmed: a release published
// before the owning node processed the SSUBSCRIBE is never delivered. Each node answers its
// commands in order, so every reply is matched to the command it answers (errors name no
// channel), and only the acknowledgement of a channel's last SSUBSCRIBE confirms it.
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lease/wait_line.hpp"
#include "redis/cluster_redirect.hpp"
#include "redis/reply.hpp"
#include "redis/topology.hpp"

namespace fencelock::detail {

class SubscriberPlan {
public:
    using Ticket = WaitLine::Ticket;
    /// A node to subscribe on: a cluster master, or Node{} for the topology's one server.
    using Node = ServerAddress;
    /// The node serving `channel` now (nullopt: not known now, or not reachable now).
    using Route = std::function<std::optional<Node>(const std::string& channel)>;
    /// Redirects in a row one channel may follow before its node counts as failing.
    static constexpr unsigned max_redirects = 16;

    struct Command {
        Node node;
        std::string verb;  ///< SSUBSCRIBE or SUNSUBSCRIBE
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
        /// Set when the reply ends the node's connection: reconnect no sooner than this.
        std::optional<std::chrono::milliseconds> reconnect_after;
        /// A MOVED answer: the slot map must learn it before commands() routes again.
        std::optional<Redirect> moved;
        /// A slot left the node: the slot map is out of date, ask the cluster again.
        bool reload_map = false;
    };
    struct Joined {
        Ticket ticket;
        bool first;  ///< the channel had no waiter: the subscriber has work
    };
    struct Left {
        std::optional<Ticket> wake;  ///< a wake-up the leaver did not use, handed on
        bool last;                   ///< the channel has no waiter left
    };

    using time_point = std::chrono::steady_clock::time_point;

    /// `linger`: how long a channel stays subscribed after its last waiter left, so that the
    /// next acquisition of a hot resource finds the subscription standing and its first attempt
    /// is watched (and can take a direct grant). Zero: unsubscribed at once.
    explicit SubscriberPlan(std::chrono::milliseconds linger = std::chrono::milliseconds(0)) : linger_(linger) {}

    /// Enters the back of `channel`'s line as `owner`, with its successor terms if it takes
    /// direct grants.
    Joined join(const std::string& channel, std::string owner, std::optional<SuccessorTerms> terms = std::nullopt);
    /// The waiter of `channel` a release by this client names its successor (WaitLine::successor).
    std::optional<WaitLine::Named> successor(const std::string& channel, time_point now,
                                             std::chrono::milliseconds margin) const;
    /// Leaves at `now`; `granted`: the waiter got the lock, so a wake-up it did not consume
    /// stays unused.
    Left leave(const std::string& channel, Ticket t, bool granted, time_point now = {});
    /// The release that woke `t` was not its to take: the next waiter behind it to wake.
    std::optional<Ticket> pass_on(const std::string& channel, Ticket t);
    /// Consumes `t`'s wake-up: true if a release (or a lost subscription) woke it.
    bool take_wake(const std::string& channel, Ticket t);
    /// Consumes the direct grant a release message announced for `t`, if one came.
    std::optional<DirectGrant> take_grant(const std::string& channel, Ticket t);
    /// A release by this client granted the lease to its waiter `owner` and said so in its reply
    /// (no message announces it): kept for that waiter as a message's grant is. Its ticket, to
    /// wake; nullopt when no waiter of `channel` has that owner token (it is gone).
    std::optional<Ticket> grant(const std::string& channel, std::string_view owner, const DirectGrant& g);
    std::size_t ahead(const std::string& channel, Ticket t);

    /// The subscription stands on the slot's node and no release on `channel` can go unseen.
    bool confirmed(const std::string& channel);
    /// Confirmed, without a waiter of its own (lingering) or with some.
    bool confirmed_now(const std::string& channel) const;
    /// When the next lingering subscription is due to be undone (commands() at or after it).
    std::optional<time_point> next_unsubscribe() const;
    /// Failures seen by `channel` (its node's connection lost, no route to a node): a waiter
    /// for a confirmation stops at a change.
    std::uint64_t failures(const std::string& channel);
    bool has_waiters(const std::string& channel) const;
    /// Some channel has waiters: the subscriber needs connections.
    bool wanted() const;

    /// The commands that bring the nodes' subscriptions in line with the waiters, each
    /// SSUBSCRIBE on the node `route` names (a channel it names no node for waits for a later
    /// call); counts them as sent. A channel without waiters is unsubscribed once it lingered
    /// `linger` since its last waiter left, by `now`.
    std::vector<Command> commands(const Route& route, time_point now = {});
    /// A reply on `node`'s subscriber connection: a release message, an acknowledgement, an
    /// error, a redirect, or the node's own `sunsubscribe` when the slot left it.
    Reaction on_reply(const Node& node, const Reply& reply);
    /// `node`'s subscriptions are gone: releases may go unseen, so waiters that relied on one
    /// look for themselves; waiters for a confirmation stop waiting. A reconnect resubscribes.
    std::vector<Notify> on_connection_lost(const Node& node);
    /// No node can be named for the channels waiting for one (the slot map cannot be loaded):
    /// their waiters for a confirmation stop waiting.
    std::vector<Notify> on_unroutable();
    /// The pause before the next connection attempt: 50 ms doubling to 1 s, back to the start
    /// only once a subscription was confirmed, so a server that accepts and then closes the
    /// connection is not hammered.
    std::chrono::milliseconds next_retry();

    // Timing (subscriber_timing.cpp): when the subscriber thread may connect to a node or load
    // the slot map, and how long it may sleep with nothing to read. It asks at the time it
    // passes in, so every rule is tested without waiting.

    /// The least time between two loads of the slot map.
    static constexpr std::chrono::milliseconds reload_pause{100};
    /// How often a subscriber on a master that can move (Sentinel) looks whether it did: a
    /// connection to the old master would wait there for messages published on the new one.
    static constexpr std::chrono::milliseconds master_check{200};

    /// The endpoint is a cluster: channels are routed by a slot map, loaded before the first
    /// route and again whenever it is out of date.
    void use_slot_map() noexcept;
    /// The slot map is out of date (no node for a channel, a slot left its node, a node
    /// failed): load it when due. Nothing without a slot map.
    void map_stale() noexcept;
    /// Whether the subscriber loads the slot map at `now`.
    bool map_load_due(time_point now) const noexcept;
    /// A load of the slot map finished at `now`. After a success the next waits reload_pause;
    /// after a failure it is due again after a retry pause, and until then no channel can be
    /// routed: its waiters for a confirmation stop waiting (the answer).
    std::vector<Notify> map_loaded(bool ok, time_point now);
    /// `node`'s connection is gone or could not be made at `now`: none before `reconnect_after`
    /// (nullopt: the next retry pause). Its subscriptions are lost (on_connection_lost), and
    /// the slot map may be out of date (the node may have been replaced).
    std::vector<Notify> node_down(const Node& node, time_point now,
                                  std::optional<std::chrono::milliseconds> reconnect_after);
    /// No connection to `node` may be made at `now`.
    bool offline(const Node& node, time_point now) const;
    /// Whether a waiter for a channel routed to `route` (nullopt: no node known) may expect a
    /// confirmation at `now`; if not, it polls instead of waiting for one that cannot come.
    bool confirmation_possible(const std::optional<Node>& route, time_point now) const;
    /// How long the subscriber may sleep at `now` with nothing to read: until an offline node
    /// may be tried again (while someone waits), the slot map is due, a lingering channel is
    /// due to be unsubscribed, or (`follows_master`) the master check. nullopt: until an event.
    std::optional<std::chrono::steady_clock::duration> quiet_for(time_point now, bool follows_master) const;

private:
    struct Channel {
        WaitLine line;
        std::optional<Node> node;  // where its last SSUBSCRIBE went
        bool on_server = false;    // SSUBSCRIBE sent there and not undone
        bool confirmed = false;    // ...and acknowledged: from here on no release goes unseen
        unsigned redirects = 0;    // MOVED answers since the last confirmation
        std::uint64_t failures = 0;
        time_point idle_since{};  // when its last waiter left (the line is empty)
    };
    // A command a node has not answered yet.
    struct Pending {
        bool subscribe;
        std::string channel;
    };
    struct Link {
        Node node;
        std::deque<Pending> pending;
    };

    Link& link(const Node& node);
    Reaction on_error(const Node& node, const Reply& error);
    std::vector<Notify> on_push(Link& link, const std::string& kind, const std::string& name,
                                const std::string& payload, bool& reload_map);
    // The channel's subscription on its node is gone (connection, or the node dropped it).
    void lose(const std::string& name, Channel& c, std::vector<Notify>& out);

    std::map<std::string, Channel, std::less<>> channels_;
    std::vector<Link> links_;
    std::chrono::milliseconds retry_{0};
    std::chrono::milliseconds linger_;
    // Nodes not to connect to before their time (a failed connect, a refused SSUBSCRIBE).
    std::vector<std::pair<Node, time_point>> offline_;
    bool slot_map_ = false;    // a cluster: routes come from a slot map
    bool map_wanted_ = false;  // ...which is to be loaded, not before map_due_
    time_point map_due_{};
    time_point unroutable_until_{};  // the last load failed: nothing routes until then
};

}  // namespace fencelock::detail
