#pragma once
/// Option aggregates. Every field has a documented default; build them with designated
/// initializers and check them once with validate(), which names the offending field.

#include <chrono>
#include <cstddef>
#include <expected>
#include <memory>
#include <string>

#include "fencelock/backoff.hpp"
#include "fencelock/limits.hpp"
#include "fencelock/observer.hpp"
#include "fencelock/redis_url.hpp"

namespace fencelock {

using std::chrono::milliseconds;

/// Checks a lease length (acquisition or renewal): at least 10 ms, at most limits::lease.
std::expected<void, OptionError> validate_lease(milliseconds lease);

struct ClientOptions {
    /// Redis server. Default 127.0.0.1:6379, db 0, no AUTH.
    RedisEndpoint endpoint{};
    /// Prepended to every key (`<prefix>lock:{R}`), to share one Redis between applications.
    /// Must not contain '{' or '}' (it would move the Cluster hash tag). Default empty.
    std::string key_prefix{};
    /// Limit for establishing a TCP connection (and the handshake). Default 1 s; at most
    /// limits::timeout (10 min).
    milliseconds connect_timeout{1000};
    /// Limit for one command's reply. A command that times out has an unknown outcome and
    /// its connection is dropped and re-established on next use. Default 1 s; at most
    /// limits::timeout (10 min). A kept lease is declared lost at its safe-until moment even
    /// while a renewal is still waiting for its reply: this timeout never delays a loss.
    milliseconds command_timeout{1000};
    /// Connections shared by the threads of one client. Each carries any number of concurrent
    /// calls, pipelined automatically on one socket (commands issued while a round trip is in
    /// flight go out together), so one is usually enough; more spread the client's I/O over
    /// more event-loop threads. The lease keeper and release notifications add one connection
    /// each when first needed. Default 1.
    std::size_t pool_size = 1;
    /// Fraction of each lease the client does not trust, for clock-rate drift between this
    /// host and Redis: a lease is considered safe until send_time + ttl * (1 - factor).
    /// Default 0.01.
    double clock_drift_factor = 0.01;
    /// How often the keeper reads the clock of each Redis server it keeps leases on (one
    /// command per server, not per lease): a forward step of that clock, which expires leases
    /// early, is declared within about this long, every lease there lost at once. Each
    /// renewal's reply carries the server's time too, and one that is ahead of the last reading
    /// calls for a probe at once. Default 1 s; 100 ms .. limits::timeout.
    milliseconds clock_probe_interval{1000};
    /// Label stored with each lease as holder metadata (next to host and pid). Default empty.
    std::string holder_label{};
    /// Wake waiting acquisitions by the release script's sharded pub/sub message (SPUBLISH)
    /// instead of polling: one extra connection per client (on a cluster, one per master that
    /// owns a waited-for resource), opened by the first acquisition that has to wait.
    /// Without channel permission (or with false) waiters fall back to the backoff.
    /// Default true.
    bool release_notifications = true;
    /// Receives lock events (for metrics and logs). Default none.
    std::shared_ptr<LockObserver> observer{};

    std::expected<void, OptionError> validate() const;
};

struct AcquireOptions {
    /// Lease length: Redis deletes the lock this long after acquisition unless renewed.
    /// At least 10 ms, at most limits::lease (24 h). Default 30 s. acquire() always gets the
    /// whole lease. A kept lease (hold(), and what builds on it) may start shorter when a
    /// release hands the lock to it directly, so that a grantee that died blocks the lock no
    /// longer than its place would have; the keeper extends it to the lease at once, and
    /// Lease::ttl and safe_until tell the truth (docs/DESIGN.md, "Direct handoff").
    milliseconds lease{30'000};
    /// Limit on total ownership, enforced by Redis from its own clock: renewals are refused
    /// from acquisition + max_hold on, and no renewal sets a TTL past acquisition + max_hold +
    /// this lease, whatever lease it asks for. At least `lease`, at most limits::max_hold
    /// (30 days). Default 1 h.
    milliseconds max_hold{std::chrono::hours(1)};
    /// How long acquire() keeps trying while the lock is contended or Redis is failing.
    /// Zero means one attempt. Default 0; at most limits::wait (24 h). Ignored by try_acquire().
    milliseconds wait{0};
    /// Delays between attempts inside `wait`. While the client is subscribed to the lock's
    /// release messages (see ClientOptions::release_notifications) a waiter is woken by the
    /// release and these delays only bound how long a missed message can keep it waiting:
    /// min(holder's remaining lease, backoff.max).
    BackoffPolicy backoff{};
    /// First come, first served among fair waiters: a waiting acquisition takes a place in a
    /// line kept in Redis, and no acquisition (fair or not) is granted while a live fair waiter
    /// is ahead of it. A waiter that stops trying loses its place after 2 * backoff.max + 2 s.
    /// Costs a few more writes per contended attempt. Default false.
    bool fair = false;
    /// Replica acknowledgement, opt-in: after the acquire script the same connection sends
    /// `WAIT replicas replica_timeout` (in the same write), and a grant fewer replicas
    /// acknowledged is released and fails with errc::not_replicated (retryable: acquire()
    /// retries it within `wait`). A kept lease's renewals are confirmed the same way, one WAIT
    /// per keeper batch. 0: off. At most 100. Default 0. WAIT is not synchronous replication:
    /// see docs/DESIGN.md, "Replica acknowledgement".
    unsigned replicas = 0;
    /// How long WAIT waits for `replicas` acknowledgements. Used only with replicas > 0; at
    /// least 1 ms (WAIT 0 would wait forever), at most limits::timeout, and at most half the
    /// client's command_timeout (checked by the client: validate_for). Default 200 ms.
    milliseconds replica_timeout{200};
    /// Whether a retryable Redis failure (unavailable, a timeout, not the master, replicas not
    /// acknowledging) is retried within `wait` like a refusal. false: the first one ends the
    /// acquisition with its error, while refusals and a promoted master's failover grace are
    /// still waited out (`fencelock run` without --wait waits for the lock, not for an outage).
    /// Default true.
    bool retry_errors = true;

    std::expected<void, OptionError> validate() const;
    /// validate(), and the checks that depend on the client: replica_timeout at most half of
    /// `command_timeout`, which bounds the wait for WAIT's reply too.
    std::expected<void, OptionError> validate_for(milliseconds command_timeout) const;
};

}  // namespace fencelock
