#pragma once
/// Transport and server failures as std::error_code values of the `fencelock` category, and
/// what a caller should do about each.
///
/// Expected outcomes of the protocol (contended, not owner, max hold reached) are NOT errors:
/// they come back as values. An error here means Redis did not give us an answer we can act on.

#include <string>
#include <string_view>
#include <system_error>

namespace fencelock {

enum class errc {
    /// Could not connect (refused, unreachable, connect timeout). Nothing was sent.
    unavailable = 1,
    /// A command was sent but no complete reply arrived in time, or the connection broke
    /// after sending. Redis may or may not have executed it.
    reply_timeout,
    /// The connection broke after the command was written; same uncertainty as reply_timeout.
    connection_lost,
    /// AUTH was refused (wrong password, unknown ACL user) or required and missing.
    auth_failed,
    /// Redis answers but cannot serve the request now: LOADING (a restarted server or a fresh
    /// replica still loading its data), BUSY (a long script), TRYAGAIN, CLUSTERDOWN or OOM.
    /// Nothing was executed.
    server_busy,
    /// A key of the lock has the wrong type or content (e.g. `fence:{R}` is not an integer).
    /// Nothing was changed; an operator must repair the key.
    corrupt_key,
    /// Any other error reply from Redis, or a reply the protocol did not expect.
    protocol_error,
    /// The server is not (or no longer) the master: READONLY (a replica, e.g. the old master
    /// after a failover), MASTERDOWN (a replica cut off from its master), or ROLE answered
    /// something other than master when the connection checked it. Nothing was written. A
    /// connection that follows a master (redis-sentinel://) drops itself and asks the sentinels
    /// again, so the retry reaches the new master.
    not_master,
    /// NOREPLICAS: the master refuses writes because fewer replicas than min-replicas-to-write
    /// are connected and in sync. The refusal comes before the first write, so nothing was
    /// written; retry once the replicas are back.
    replicas_unavailable,
    /// The address of a redis:// URL answers as a Redis Sentinel, not as a Redis server. Fatal:
    /// name the sentinels and the master group with redis-sentinel://host:port[,...]#name.
    is_sentinel,
    /// The master was promoted less than RedisEndpoint::failover_grace ago: it grants no new
    /// lease until every lease the old master may have granted without replicating it has run
    /// out. Nothing was kept (an acquisition granted meanwhile is released at once); retry after
    /// the grace. Renewals of leases that reached the new master are not affected.
    failover_grace,
    /// Replica acknowledgement (AcquireOptions::replicas): the lease was granted but fewer
    /// replicas than asked acknowledged it (WAIT) within replica_timeout, so a failover could
    /// forget it. The lease was released (compare-and-delete) and is not held; retry.
    not_replicated,
    /// A redis-cluster:// endpoint reached a server that is not a cluster node (cluster
    /// support disabled): fatal. Use redis:// for a single server.
    not_cluster,
    /// The resource's fence counter is at 2^53 - 1 (max_fence): no larger fence can be issued,
    /// so the resource cannot be locked again. Nothing was changed. Fatal: use another
    /// resource name (fences must never go back, so the counter cannot be reset safely).
    fence_exhausted,
};

/// What a caller should do next after an error.
enum class failure_kind {
    /// Nothing happened on the server; trying again (with backoff) is safe.
    retryable,
    /// The request may have been executed. For acquire, retry with the SAME owner token
    /// (the script answers with the existing fence); for renew, treat the lease as at risk.
    outcome_unknown,
    /// Retrying will not help without a configuration or data fix.
    fatal,
};

const std::error_category& error_category() noexcept;

inline std::error_code make_error_code(errc e) noexcept { return {static_cast<int>(e), error_category()}; }

/// Refusals of a Redis server that may evict keys (maxmemory-policy other than `noeviction`):
/// an evicted fence counter would hand out a fence twice, an evicted lease would let a second
/// owner in, evicted queue keys would lose jobs. Every connection checks the policy before its
/// first command and fails closed with an error of this category, whose message() names the
/// policy (or says it could not be read). classify() says fatal. Opt out, only if you know
/// fencelock's keys can never be evicted, with RedisEndpoint::allow_eviction.
const std::error_category& eviction_category() noexcept;

/// Classification of any error code returned by this library.
failure_kind classify(std::error_code ec) noexcept;

/// Stable snake_case name of a failure kind ("retryable", "outcome_unknown", "fatal").
std::string_view to_string(failure_kind kind) noexcept;

/// The server's own words for the most recent error of code `ec` in this process: the error
/// reply Redis sent (e.g. "OOM command not allowed when used memory > 'maxmemory'.", "ERR DB
/// index is out of range") and, for a script, the keys it was called on. Empty when no error
/// reply of that code was seen. A std::error_code cannot carry text, so the transport records
/// it where it classifies the reply; the code stays what callers act on, this is for people
/// (log lines and the CLI's `detail`). Thread-safe.
std::string error_detail(std::error_code ec);

/// A finer, stable name for the most recent error of code `ec`, for programs (the CLI's JSON
/// `code`), where one code covers several causes a person would fix differently:
///   unavailable:  "connection_refused", "connect_timeout", "name_resolution_failed",
///                 "handshake_timeout" (the server accepted the connection and never answered),
///                 "handshake_closed" (it closed the connection unanswered: a TLS port?)
///   auth_failed:  "auth_required" (the server wants a password and none was given),
///                 "auth_rejected" (a wrong password or an unknown ACL user: Redis answers
///                 both alike), "noperm" (the ACL user may not run a command or touch a key)
/// Empty when the most recent error of that code had no finer cause. Thread-safe.
std::string error_cause(std::error_code ec);

namespace detail {
/// Records `text` (and `cause`, see error_cause) as the detail of `ec`. Thread-safe.
void remember_error_detail(std::error_code ec, std::string text, std::string cause = {}) noexcept;
/// While it lives, every detail this thread records starts with "<where>: " (a server,
/// "127.0.0.1:6379"): code that judges replies without knowing where they came from (the
/// handshake) records them located, in one step, so no other thread's text gets the prefix.
class ErrorPlace {
public:
    explicit ErrorPlace(std::string where) noexcept;
    ~ErrorPlace();
    ErrorPlace(const ErrorPlace&) = delete;
    ErrorPlace& operator=(const ErrorPlace&) = delete;

private:
    std::string where_;
    const std::string* outer_;
};
/// While it lives, this thread records no detail: its failures answer no caller (a background
/// retry such as the sentinel watcher's), and must not replace the detail a caller's failure
/// left for error_detail() to read.
class UnheardFailures {
public:
    UnheardFailures() noexcept;
    ~UnheardFailures();
    UnheardFailures(const UnheardFailures&) = delete;
    UnheardFailures& operator=(const UnheardFailures&) = delete;

private:
    bool outer_;
};
}  // namespace detail

}  // namespace fencelock

template <>
struct std::is_error_code_enum<fencelock::errc> : std::true_type {};
