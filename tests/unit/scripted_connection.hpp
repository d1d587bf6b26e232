#pragma once
// Scripted stand-ins for Redis and the clock, for the pure state machines of src/lock: a test
// writes down what the server will answer, runs the machine, and reads back, in words, every
// step the machine asked for. Nothing here sleeps or opens a socket; time is a counter.
#include <chrono>
#include <cstddef>
#include <deque>
#include <expected>
#include <map>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "coordinator/redis/subscriber_plan.hpp"
#include "fencelock/observer.hpp"
#include "lease/acquire_loop.hpp"
#include "reply_builders.hpp"

namespace fencelock::test_support {

using namespace std::chrono_literals;
using std::chrono::milliseconds;

inline detail::AcquireReply granted(std::uint64_t fence, milliseconds ttl = 30s, bool reacquired = false) {
    return {.acquired = true, .fence = FencingToken{fence}, .ttl = ttl, .reacquired = reacquired};
}
inline detail::AcquireReply contended(milliseconds holder_ttl, bool queued = false) {
    return {.acquired = false, .ttl = holder_ttl, .queued = queued};
}
/// Refused with the fence the script saw (the holder's, or the counter when queued).
inline detail::AcquireReply refused_at(std::uint64_t seen_fence, milliseconds holder_ttl = 10s, bool queued = false) {
    return {.acquired = false, .ttl = holder_ttl, .queued = queued, .seen_fence = FencingToken{seen_fence}};
}

/// Runs an AcquireLoop against a script: attempt replies, subscription outcomes and release
/// messages, on a fake clock. Every step lands in log() ("attempt", "join", "wait", "sleep",
/// "pass_on", "leave_line", "release", "finish <result>").
class ScriptedAcquire {
public:
    using AttemptReply = std::expected<detail::AcquireReply, std::error_code>;
    using Kind = detail::AcquireStep::Kind;

    explicit ScriptedAcquire(detail::AcquirePlan plan, std::uint64_t seed = 1)
        : rng_(seed), loop_(std::move(plan), rng_) {}

    /// The next attempt's reply, arriving `round_trip` after it was sent.
    ScriptedAcquire& reply(AttemptReply r, milliseconds round_trip = 1ms) {
        replies_.push_back({std::move(r), round_trip});
        return *this;
    }
    /// The outcome of the next join_line: the subscription confirmed or not, local waiters ahead.
    ScriptedAcquire& subscription(bool confirmed, std::size_t ahead = 0) {
        joins_.push_back({confirmed, ahead, std::nullopt});
        return *this;
    }
    /// The next join finds the lock held by this client for `held_for` more: its release will
    /// name this waiter its successor.
    ScriptedAcquire& successor_join(milliseconds held_for, std::size_t ahead = 0) {
        joins_.push_back({true, ahead, held_for});
        return *this;
    }
    /// A release wakes the next wait_for_release `after` it began (if that is before its end).
    ScriptedAcquire& release_after(milliseconds after) {
        releases_.push_back({after, std::nullopt});
        return *this;
    }
    /// A release grants this waiter the lease directly `after` the next wait_for_release began.
    ScriptedAcquire& grant_after(milliseconds after, std::uint64_t fence, milliseconds ttl = 4s) {
        releases_.push_back({after, detail::DirectGrant{FencingToken{fence}, ttl}});
        return *this;
    }
    /// The same, told by the reply of a release of this client sent `sent_before` before the
    /// grant arrives.
    ScriptedAcquire& reply_grant_after(milliseconds after, std::uint64_t fence, milliseconds ttl,
                                       milliseconds sent_before) {
        releases_.push_back({after, detail::DirectGrant{FencingToken{fence}, ttl}, sent_before});
        return *this;
    }
    /// The reply to the next extend step (renewing a short handed lease to the plan's lease).
    ScriptedAcquire& extend_reply(std::expected<detail::RenewReply, std::error_code> reply,
                                  milliseconds round_trip = milliseconds(1)) {
        extensions_.push_back({std::move(reply), round_trip});
        return *this;
    }
    /// Whether a promoted master's failover grace holds when grants arrive.
    ScriptedAcquire& in_grace(bool grace) {
        in_grace_ = grace;
        return *this;
    }
    /// Stop is requested during the n-th wait or sleep (1-based) and stays requested.
    ScriptedAcquire& stop_during_wait(unsigned n) {
        stop_at_wait_ = n;
        return *this;
    }

    /// Drives the loop to its finish step and returns it.
    detail::AcquireStep run(bool others_wait = false, bool subscribed = false) {
        auto step = loop_.start(start_, others_wait, subscribed);
        for (int guard = 0; guard < 10'000; ++guard) {
            switch (step.kind) {
                case Kind::attempt: step = attempt(step); break;
                case Kind::join_line: step = join(step); break;
                case Kind::wait_for_release: step = wait(step); break;
                case Kind::sleep: step = sleep(step); break;
                case Kind::pass_on:
                    log_.push_back("pass_on");
                    step = loop_.done();
                    break;
                case Kind::extend: step = extend(step); break;
                case Kind::leave_line:
                    owner_step("leave_line", step);
                    step = loop_.done();
                    break;
                case Kind::release:
                    owner_step("release", step);
                    step = loop_.done();
                    break;
                case Kind::finish: log_.push_back("finish " + std::string(to_string(step.result))); return step;
            }
        }
        throw std::logic_error("the acquire loop never finished");
    }

    const std::vector<std::string>& log() const { return log_; }
    /// The owner token of every attempt, leave_line and release, in order.
    const std::vector<std::string>& owners() const { return owners_; }
    /// Each wait_for_release's length (until - now) and each sleep's delay, in order.
    const std::vector<milliseconds>& waits() const { return waits_; }
    /// The ends of the wait_for_release and join_line steps, from the start.
    const std::vector<milliseconds>& untils() const { return untils_; }
    milliseconds elapsed() const { return since_start(now_); }
    /// A moment the loop handed back (e.g. a finish step's `sent`), from the start.
    milliseconds at(steady_time t) const { return since_start(t); }
    const detail::AcquireLoop& loop() const { return loop_; }
    detail::AcquireLoop& loop() { return loop_; }

private:
    struct Scripted {
        AttemptReply reply;
        milliseconds round_trip;
    };
    struct Join {
        bool confirmed;
        std::size_t ahead;
        std::optional<milliseconds> held_for;
    };
    struct Release {
        milliseconds after;
        std::optional<detail::DirectGrant> grant;   // a direct grant, or a plain wake-up
        std::optional<milliseconds> sent_before{};  // a grant told by a release's reply
    };

    milliseconds since_start(steady_time t) const { return std::chrono::duration_cast<milliseconds>(t - start_); }

    void owner_step(const char* what, const detail::AcquireStep& step) {
        log_.push_back(what);
        owners_.push_back(step.owner ? step.owner->str() : "<none>");
    }

    detail::AcquireStep attempt(const detail::AcquireStep& step) {
        owner_step("attempt", step);
        if (replies_.empty())
            throw std::logic_error("the script has no reply for attempt " + std::to_string(owners_.size()));
        auto next = std::move(replies_.front());
        replies_.pop_front();
        const steady_time sent = now_;
        now_ += next.round_trip;
        return loop_.replied(next.reply, subscribed_, sent, now_, stopped_);
    }

    detail::AcquireStep extend(const detail::AcquireStep& step) {
        owner_step("extend", step);
        if (extensions_.empty()) throw std::logic_error("the script has no reply for an extend step");
        auto next = std::move(extensions_.front());
        extensions_.pop_front();
        const steady_time sent = now_;
        now_ += next.round_trip;
        return loop_.extended(next.reply, sent, now_);
    }

    detail::AcquireStep join(const detail::AcquireStep& step) {
        log_.push_back("join");
        untils_.push_back(since_start(step.until));
        if (joins_.empty()) throw std::logic_error("the script has no subscription outcome");
        const auto j = joins_.front();
        joins_.pop_front();
        subscribed_ = j.confirmed;
        if (j.held_for) return loop_.joined(j.confirmed, j.ahead, now_ + *j.held_for);
        return loop_.joined(j.confirmed, j.ahead);
    }

    detail::AcquireStep wait(const detail::AcquireStep& step) {
        log_.push_back("wait");
        untils_.push_back(since_start(step.until));
        waits_.push_back(std::chrono::duration_cast<milliseconds>(step.until - now_));
        const bool stop_now = count_wait();
        bool woken = false;
        std::optional<detail::DirectGrant> grant;
        if (!releases_.empty() && now_ + releases_.front().after < step.until) {
            now_ += releases_.front().after;
            grant = releases_.front().grant;
            if (grant && releases_.front().sent_before) grant->release_sent = now_ - *releases_.front().sent_before;
            releases_.pop_front();
            woken = true;
        } else if (!stop_now) {
            now_ = std::max(now_, step.until);
        }
        if (grant) log_.push_back("granted");
        return loop_.waited(woken, stopped_, grant, now_, in_grace_);
    }

    detail::AcquireStep sleep(const detail::AcquireStep& step) {
        log_.push_back("sleep");
        waits_.push_back(step.delay);
        if (!count_wait()) now_ += step.delay;
        return loop_.waited(false, stopped_);
    }

    bool count_wait() {
        ++waits_seen_;
        if (stop_at_wait_ && waits_seen_ >= *stop_at_wait_) stopped_ = true;
        return stopped_;
    }

    std::mt19937_64 rng_;
    detail::AcquireLoop loop_;
    steady_time start_{std::chrono::hours(1)};
    steady_time now_ = start_;
    std::deque<Scripted> replies_;
    std::deque<Join> joins_;
    std::deque<Release> releases_;
    struct Extension {
        std::expected<detail::RenewReply, std::error_code> reply;
        milliseconds round_trip;
    };
    std::deque<Extension> extensions_;
    bool in_grace_ = false;
    std::optional<unsigned> stop_at_wait_;
    unsigned waits_seen_ = 0;
    bool subscribed_ = false;
    bool stopped_ = false;
    std::vector<std::string> log_;
    std::vector<std::string> owners_;
    std::vector<milliseconds> waits_;
    std::vector<milliseconds> untils_;
};

/// The subscriber connections of a SubscriberPlan: records the commands the plan sends, as
/// "SSUBSCRIBE ch" (with " @host:port" for a cluster node), routes channels as a test sets
/// them, and delivers each node's push replies and connection losses to the plan.
class ScriptedSubscriberConnection {
public:
    using Notify = detail::SubscriberPlan::Notify;
    using Node = detail::SubscriberPlan::Node;

    explicit ScriptedSubscriberConnection(detail::SubscriberPlan& plan) : plan_(plan) {}

    /// `channel` is served by `node` from now on (nullopt: no node known).
    void route(const std::string& channel, std::optional<Node> node) { routes_[channel] = std::move(node); }

    /// Sends what the plan wants sent now; returns just those commands.
    std::vector<std::string> flush() {
        std::vector<std::string> now;
        const auto route = [&](const std::string& channel) -> std::optional<Node> {
            auto it = routes_.find(channel);
            return it == routes_.end() ? std::optional<Node>(Node{}) : it->second;
        };
        for (const auto& c : plan_.commands(route)) now.push_back(c.verb + " " + c.channel + at(c.node));
        sent_.insert(sent_.end(), now.begin(), now.end());
        return now;
    }
    /// The node acknowledges an SSUBSCRIBE of `channel`.
    std::vector<Notify> ack(const std::string& channel, const Node& node = {}) {
        return push(A({S("ssubscribe"), S(channel), I(1)}), node);
    }
    /// A `sunsubscribe` of `channel` from `node`: the answer to ours, or the node's own when
    /// the slot left it.
    std::vector<Notify> unsubscribed(const std::string& channel, const Node& node = {}) {
        return push(A({S("sunsubscribe"), S(channel), I(0)}), node);
    }
    /// The release script's message on `channel`, naming the next fair waiter or no one.
    std::vector<Notify> message(const std::string& channel, const std::string& next_owner = {}, const Node& node = {}) {
        return push(A({S("smessage"), S(channel), S(next_owner)}), node);
    }
    /// Any reply; remembers whether it ended the connection, the redirect and the map reload.
    std::vector<Notify> push(const detail::Reply& reply, const Node& node = {}) {
        last_ = plan_.on_reply(node, reply);
        return last_.notify;
    }
    std::vector<Notify> disconnect(const Node& node = {}) { return plan_.on_connection_lost(node); }

    const std::vector<std::string>& sent() const { return sent_; }
    std::optional<milliseconds> reconnect_after() const { return last_.reconnect_after; }
    const detail::SubscriberPlan::Reaction& last() const { return last_; }

    static std::string at(const Node& node) {
        return node == Node{} ? std::string{} : " @" + node.host + ":" + std::to_string(node.port);
    }

private:
    detail::SubscriberPlan& plan_;
    std::map<std::string, std::optional<Node>> routes_;
    std::vector<std::string> sent_;
    detail::SubscriberPlan::Reaction last_;
};

}  // namespace fencelock::test_support
