#pragma once
// A Redis server's wall clock watched against this process's steady clock, from TIME replies.
//
// Redis expires keys by its wall clock (mstime()), so a forward step of S seconds expires every
// lease on that server S seconds early: a second holder can be granted while the first still
// trusts its lease, and the first learns of it only at its next renewal (not_owner). Leases
// count on the clocks moving at nearly the same rate (clock_drift_factor), never on them
// agreeing, so the watch compares what elapsed between two consecutive readings: the server's
// clock may advance by the steady time elapsed, give or take both round trips (each reply was
// made somewhere inside its own), the drift factor's share of it, and a fixed allowance. More
// than that forward is a step: the keeper declares every lease on that server lost at once.
// (Consecutive readings, not a fixed baseline: this machine's wall clock was measured running
// 0.5 % faster than its steady clock, which over an hour adds up to 18 s.) A step backwards
// only makes leases last longer in Redis, which is safe; it is not reported.
//
// Readings carry where they came from: on a single server or Sentinel's master the
// connection's CLIENT ID, on a cluster node a hash of the server's run_id (the probe there is a
// keyed script, which cannot ask CLIENT ID). Another origin (a reconnect, a failover to
// another server with its own clock, a restart) starts afresh instead of counting as a step.
#include <chrono>
#include <cstdint>
#include <optional>
#include <utility>

namespace fencelock::detail {

/// How a keeper watches server clocks (ClientOptions::clock_drift_factor, clock_probe_interval).
struct ClockWatchTerms {
    double drift_factor = 0.01;
    std::chrono::milliseconds probe_every{1000};
};

class ServerClockWatch {
public:
    using time = std::chrono::steady_clock::time_point;
    struct Reading {
        time sent;                         ///< when TIME went out
        time received;                     ///< when its reply came back
        std::chrono::microseconds server;  ///< what TIME said
        std::int64_t connection = 0;       ///< its origin: CLIENT ID, or a hash of the run_id
    };

    /// A fixed allowance on top of the round trips and the drift: TIME's resolution and noise.
    static constexpr std::chrono::milliseconds allowance{5};

    explicit ServerClockWatch(double drift_factor) : drift_factor_(drift_factor) {}

    /// A forward step of the server's clock since the previous reading, beyond the margin: by
    /// how much. nullopt otherwise (and for the first reading of a connection).
    std::optional<std::chrono::microseconds> observe(const Reading& r) {
        const std::optional<Reading> last = std::exchange(last_, r);
        if (!last || last->connection != r.connection) return std::nullopt;
        return step_since(*last, r.received, r.server);
    }

    /// Whether a server time of unknown origin (a renewal's reply: it carries no CLIENT ID)
    /// read between `sent` and `received` is further ahead of the last reading than the
    /// margin allows. Only a hint, nothing is recorded: the caller probes at once, and that
    /// probe, whose origin is known, decides.
    bool suggests_step(time received, std::chrono::microseconds server) const {
        return last_ && step_since(*last_, received, server).has_value();
    }

    /// Whether `r` would start afresh: the first reading, or one from another origin.
    bool new_origin(const Reading& r) const { return !last_ || last_->connection != r.connection; }

private:
    std::optional<std::chrono::microseconds> step_since(const Reading& last, time received,
                                                        std::chrono::microseconds server_now) const {
        using std::chrono::microseconds;
        const auto server = server_now - last.server;
        const auto steady_most = std::chrono::duration_cast<microseconds>(received - last.sent);
        const auto margin =
            microseconds(allowance) +
            microseconds(static_cast<microseconds::rep>(static_cast<double>(steady_most.count()) * drift_factor_));
        if (server > steady_most + margin) return server - steady_most;
        return std::nullopt;
    }

    double drift_factor_;
    std::optional<Reading> last_;
};

}  // namespace fencelock::detail
