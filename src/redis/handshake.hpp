#pragma once
// What every connection sends before the first command of a caller, and how the replies are
// judged: pure code, shared by the blocking connection (and the subscriber built on it) and
// the multiplexed connection's event loop, which only send and read.
//
// Eviction. fencelock's guarantees rest on Redis never deleting a key it was not told to: an
// evicted `fence:{R}` restarts the counter (a fence is issued twice), an evicted lease lets a
// second owner in while the first is still valid, and evicted queue keys lose jobs. Only
// maxmemory-policy `noeviction` rules that out, so each connection learns the policy before
// it serves a caller and refuses any other (fail closed). CONFIG is often refused by ACLs or
// renamed by managed services; INFO memory reports the same policy and is asked in the same
// round trip, so the check costs no extra one. Either answer decides; with neither the
// connection is refused too, unless the endpoint says evictions are accepted.
//
// Role. A connection whose topology follows a master (Sentinel) asks ROLE in the same round
// trip: the sentinels may name a server that is no longer, or not yet, the master (a failover
// under way, a stale sentinel), and a replica must never serve a caller (its writes would fail
// with READONLY at best). Anything but "master" fails the connection with not_master, and the
// next connect asks the sentinels again.
//
// Clock. TIME goes last, in the same round trip: the server's clock offset from this host's
// at connect, logged when it is over 1 s (redis_clock_offset). Leases depend on clock rates
// only, but fences across a failover follow the servers' clocks (docs/DESIGN.md, "Clock
// skew"), so a server far off is worth a line. Its reply never fails the connection.
#include <chrono>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "fencelock/redis_url.hpp"
#include "redis/reply.hpp"

namespace fencelock::detail {

struct HandshakeStep {
    enum class Kind { auth, select, role, config_policy, info_memory, clock };
    Kind kind;
    std::vector<std::string> argv;
};

/// What the connection's topology asks of the handshake beyond what the endpoint needs.
struct HandshakeNeeds {
    /// Ask ROLE and fail unless the server is a master (Topology::follows_master()).
    bool confirm_master = false;
};

/// AUTH (with a password), SELECT (db != 0), ROLE (needs.confirm_master), then CONFIG GET
/// maxmemory-policy and INFO memory (unless endpoint.allow_eviction), and TIME when any of
/// those is sent, in that order: they are sent back to back.
std::vector<HandshakeStep> handshake_steps(const RedisEndpoint& endpoint, HandshakeNeeds needs);
/// The same with no needs beyond the endpoint's (no ROLE).
std::vector<HandshakeStep> handshake_steps(const RedisEndpoint& endpoint);

/// The outcome from the steps' replies, in step order: success, auth_failed, the SELECT
/// error, not_master (ROLE is not master), or an eviction refusal (eviction_category) naming
/// the policy.
std::error_code judge_handshake(std::span<const HandshakeStep> steps, std::span<const Reply> replies);

/// The server's clock minus this host's (`received`: when the replies arrived, by this host's
/// wall clock), from the TIME step's reply; nullopt when there is none or it is an error.
std::optional<std::chrono::microseconds> clock_offset_in(std::span<const HandshakeStep> steps,
                                                         std::span<const Reply> replies,
                                                         std::chrono::system_clock::time_point received);

/// Logs redis_clock_offset (warn) when |offset| is over 1 s, once per server and process.
void note_clock_offset(const std::string& server, std::optional<std::chrono::microseconds> offset);

/// The policy in a CONFIG GET maxmemory-policy reply or an INFO memory reply, or nullopt when
/// the reply is an error or does not say.
std::optional<std::string> policy_in_config(const Reply& reply);
std::optional<std::string> policy_in_info(const Reply& reply);

/// Whether a ROLE reply says master (["master", offset, replicas]).
bool role_is_master(const Reply& reply);

/// The error for a server whose policy is `policy` (nullopt: could not be learned).
std::error_code eviction_refusal(const std::optional<std::string>& policy);

}  // namespace fencelock::detail
