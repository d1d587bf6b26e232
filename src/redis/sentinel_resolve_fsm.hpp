#pragma once
// Sentinel resolution and the failover-grace estimate without I/O, in the manner of
// boost.redis's *_fsm: the machine says what to ask whom (SentinelStep), is fed the replies
// (or why there are none), and ends with the master and the witnesses of its term. The
// driver (redis/sentinel_topology.cpp) only carries commands and replies: it connects, logs
// in with the right credentials, and keeps the order and the term between resolves. The
// rules (why a majority, why the youngest age, why epoch 0 needs the master's word) are
// redis/sentinel_views.hpp's and docs/DESIGN.md's ("Sentinel", "The failover grace").
//
// One resolve, as SentinelResolveFsm plays it:
//  1. Ask the sentinels in order `SENTINEL get-master-addr-by-name NAME` (and, when the grace
//     is on, `SENTINEL MASTER NAME` in the same round trip). A failure, an error reply or a
//     nil answer moves on to the next; none naming a master is the result's error.
//  2. Grace on: ask the others in order (those that failed in step 1 too, since they may
//     answer now) until a majority of the configured sentinels name the same master with a
//     readable view, or none is left; youngest_agreeing_view decides the view.
//  3. The view says first term, the grace allows trusting it and the view is younger than the
//     grace: ask the master itself `INFO replication` and `INFO persistence` on a connection
//     of its own (started_fresh). Asked at every resolve, never remembered: a yes is true only
//     of the moment it was given.
// Then MasterTerm::note, told the moment by the caller, turns the witnesses into the moment
// grants may start.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <vector>

#include "fencelock/redis_url.hpp"
#include "redis/reply.hpp"
#include "redis/sentinel_views.hpp"
#include "redis/topology.hpp"

namespace fencelock::detail {

/// What one resolve needs to know; fixed for the resolve.
struct SentinelResolveOptions {
    std::string master_name;             ///< the group's name in Sentinel
    std::vector<HostAndPort> sentinels;  ///< in the order to ask them (no default: the URL's)
    /// RedisEndpoint::failover_grace; zero: no SENTINEL MASTER, no agreement, no term.
    std::chrono::milliseconds grace{0};
    /// RedisEndpoint::trust_first_term: whether a confirmed first term owes no grace.
    bool trust_first_term = true;
};

/// What the driver does next.
struct SentinelStep {
    enum class Kind {
        ask_sentinel,  ///< send `commands` to options.sentinels[sentinel], with the sentinel login
        ask_master,    ///< send `commands` to `master` on a connection of its own, with the master's login
        done,          ///< nothing more to send: result() holds the outcome
    };
    Kind kind = Kind::done;
    std::size_t sentinel = 0;  ///< ask_sentinel only
    ServerAddress master;      ///< ask_master only
    std::vector<std::vector<std::string>> commands;
};

/// Why a query has no replies to read: its words for the error detail, and error_cause()'s
/// name when it has one (empty otherwise).
struct SentinelQueryFailure {
    std::string words;
    std::string cause;
};

/// The replies to a step's commands, one per command in order (an error reply to a later
/// command stays a reply), or why there are none: no connection, no answer in time, the
/// login or the first command refused.
using SentinelQueryReplies = std::expected<std::vector<Reply>, SentinelQueryFailure>;

/// What the sentinels and the master said about the master's term, for MasterTerm::note.
struct TermEvidence {
    MasterView view;          ///< youngest_agreeing_view's (age zero: fewer than a majority agreed)
    bool first_term = false;  ///< view.first_term, trusted, and confirmed by started_fresh
};

/// A resolve that found the master.
struct SentinelResolved {
    ServerAddress master;
    std::size_t sentinel = 0;          ///< the first that named it (goes to the front of the order)
    std::optional<TermEvidence> term;  ///< nullopt when the grace is off
};

/// A resolve that found none: errc::unavailable with this detail and cause.
struct SentinelUnavailable {
    std::string detail;  ///< "no sentinel named a master for 'NAME': sentinel HOST:PORT: why; ..."
    std::string cause;   ///< the last sentinel's error_cause() name, empty when it has none
};

/// One resolve (see the top of this file). Use: `for (auto s = fsm.start(); s.kind != done;
/// s = fsm.on_reply(perform(s)));` then result(). Calling on_reply() after done, or result()
/// before it, is misuse (std::logic_error).
class SentinelResolveFsm {
public:
    explicit SentinelResolveFsm(SentinelResolveOptions options);

    /// The first step: ask the first sentinel (done at once when none is configured).
    SentinelStep start();
    /// The replies to the last step's commands; the next step.
    SentinelStep on_reply(const SentinelQueryReplies& replies);
    /// The outcome, once a step said done.
    const std::expected<SentinelResolved, SentinelUnavailable>& result() const;

private:
    enum class Phase { finding, agreeing, confirming, done };

    SentinelStep ask(std::size_t sentinel) const;
    SentinelStep on_finding(const SentinelQueryReplies& replies);
    SentinelStep ask_next_for_agreement();
    SentinelStep finish(std::optional<TermEvidence> term);
    std::optional<SentinelAnswer> answer_in(const SentinelQueryReplies& replies) const;

    const SentinelResolveOptions options_;
    Phase phase_ = Phase::finding;
    std::size_t next_ = 0;   ///< finding: the sentinel asked; agreeing: the next to consider
    std::size_t first_ = 0;  ///< the sentinel that named the master first
    std::vector<std::optional<SentinelAnswer>> answers_;  ///< first_'s answer, then the others'
    MasterView view_;                                     ///< confirming: the view the master's word would confirm
    std::string why_;                                     ///< finding: each sentinel's failure, for the detail
    std::string last_cause_;
    std::optional<std::expected<SentinelResolved, SentinelUnavailable>> result_;
};

/// Start moments of one term, as estimated at different times from different sentinels, differ
/// by when each sentinel learned of it and by clock drift: up to about a second on one machine.
/// A larger difference is another term (MasterTerm::note).
inline constexpr std::chrono::seconds term_start_jitter{1};

/// What MasterTerm::note made of one resolve's evidence.
enum class TermChange {
    same_term,  ///< the recorded term: the earlier of the two moments stands
    new_term,   ///< another term, and its moment is later: the record is now about it
    stale,      ///< another term whose moment is no later (a sentinel naming the dead master): ignored
};

/// The moment grants may start, and what changed.
struct TermNote {
    std::chrono::steady_clock::time_point grants_from;
    TermChange change = TermChange::same_term;
};

/// The term grants_from() is about, kept across resolves (the caller serialises note()).
///
/// The master may grant from `grace` after it became master, or at once in a confirmed first
/// term. One term is one master, config epoch and count of +switch-master heard, with a start
/// moment (now minus the view's age) no later than the recorded one by term_start_jitter: each
/// estimate of a term errs late, so the earliest stands. Anything else can only push the moment
/// later: another master, a newer epoch, a switch heard since, a sentinel that still names the
/// dead master, and a start moment clearly later than the recorded one. The last is how a term
/// Sentinel never announced looks (a hand promotion away and back with the sentinels
/// re-created: same address, epoch 0, no switch message); a majority of restarted sentinels
/// look the same, and cost a stall.
class MasterTerm {
public:
    explicit MasterTerm(std::chrono::milliseconds grace) : grace_(grace) {}

    /// Folds one resolve's evidence about `master` in. `now` is when the evidence is noted
    /// (after its last round trip: a later moment only lengthens the grace); `switches` the
    /// +switch-master messages heard by then.
    TermNote note(const ServerAddress& master, const TermEvidence& evidence, std::chrono::steady_clock::time_point now,
                  std::uint64_t switches);

    /// The moment grants may start (the clock's epoch before the first note: at once).
    std::chrono::steady_clock::time_point grants_from() const noexcept { return grants_from_; }

private:
    const std::chrono::milliseconds grace_;
    std::optional<ServerAddress> master_;  ///< grants_from_ is about its term
    std::uint64_t epoch_ = 0;
    std::uint64_t switches_ = 0;                   ///< the switch count then
    std::chrono::steady_clock::time_point start_;  ///< when that master became master
    std::chrono::steady_clock::time_point grants_from_;
};

}  // namespace fencelock::detail
