#pragma once
// Wakes a lock's waiters when its holder releases it, from the release script's sharded
// pub/sub message (SPUBLISH), instead of leaving them to poll.
//
// One subscriber thread per client, subscribed (SSUBSCRIBE) to a resource's channel only while
// a thread of this client waits for that resource, on the node that owns the channel's slot:
// the one server (or Sentinel's master, followed across failovers), or on a cluster the master
// the slot map names, one connection per such master. Messages are hints: a waiter still
// takes the lock through the acquire script, so a lost, late or spurious message can delay a
// waiter (its backoff timer is the fallback) but never let two hold the lock.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>

#include "coordinator/coordinator.hpp"
#include "coordinator/redis/calls/grant_message.hpp"
#include "lease/wait_line.hpp"
#include "redis/hiredis_connection.hpp"

namespace fencelock::detail {

class ReleaseNotifier {
public:
    explicit ReleaseNotifier(ConnectionSettings settings);
    ~ReleaseNotifier();
    ReleaseNotifier(const ReleaseNotifier&) = delete;
    ReleaseNotifier& operator=(const ReleaseNotifier&) = delete;

    struct State;

    /// A place in this client's local line for one channel (the Redis watch's seat). Leaves
    /// the line when destroyed.
    class Waiter final : public WatchSeat {
    public:
        Waiter(std::shared_ptr<State> state, std::string channel, std::string owner,
               std::optional<SuccessorTerms> terms);
        ~Waiter() override;
        Waiter(const Waiter&) = delete;
        Waiter& operator=(const Waiter&) = delete;

        /// Waits until Redis confirmed the subscription (true), or it failed, `until` passed or
        /// `stop` was requested. Only after a confirmation can no release go unnoticed.
        bool subscribed(steady_time until, std::stop_token stop) override;
        /// Whether the subscription stands now (a broken connection drops it).
        bool subscribed_now() const override;
        /// Waiters of this client in front of this one.
        std::size_t ahead() const override;
        /// Sleeps until a release picks this waiter (true), or `until` passes or `stop` is
        /// requested (false).
        bool wait(steady_time until, std::stop_token stop) override;
        /// Consumes the direct grant a release announced for this waiter (its owner token), if
        /// one came: the waiter decides whether to trust it (lease/acquire_loop.hpp).
        std::optional<DirectGrant> take_grant() override;
        /// The release that woke this waiter was not its to take: wake the next one behind it.
        void pass_on() override;
        /// This waiter got the lock: a wake-up it did not consume is not handed on.
        void granted() noexcept override { granted_ = true; }

    private:
        std::shared_ptr<State> state_;
        std::string channel_;
        std::uint64_t ticket_;
        std::condition_variable_any cv_;
        bool granted_ = false;
    };

    /// How many times, in this process, a waiter began to sleep until a release (wait()).
    /// Lets a test know a waiter relies on a message, which no server-side count can tell.
    static std::uint64_t waits_begun() noexcept;
    /// How many direct grants, in this process, a waiter took from a release message
    /// (take_grant()): lets a test know grants reached waiters.
    static std::uint64_t grants_taken() noexcept;

    /// Enters the back of the local line for `channel` as `owner`, subscribing if needed;
    /// `terms`: it takes direct grants, and a release by this client may name it its successor.
    std::unique_ptr<Waiter> join(const std::string& channel, const std::string& owner,
                                 std::optional<SuccessorTerms> terms = std::nullopt);
    /// The waiter a release of `channel` by this client names its successor (WaitLine::successor).
    std::optional<WaitLine::Named> successor(const std::string& channel, std::chrono::milliseconds margin) const;
    /// Hands a direct grant a release by this client made (its reply says so, no message does)
    /// to this client's waiter `owner` for `channel`, and wakes it. False when no such waiter
    /// is here any more: then the lease is nobody's to use.
    bool grant(const std::string& channel, std::string_view owner, const DirectGrant& g);
    /// Whether some thread of this client waits for `channel`.
    bool has_waiters(const std::string& channel) const;
    /// Whether `channel`'s subscription stands confirmed now, waiters or not (it lingers a
    /// moment after the last waiter left).
    bool subscribed(const std::string& channel) const;

private:
    std::shared_ptr<State> state_;
    std::thread thread_;
};

}  // namespace fencelock::detail
