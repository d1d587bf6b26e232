#pragma once
// Replica acknowledgement (AcquireOptions::replicas): the WAIT that follows an acquire or a
// keeper batch on the same connection, and the pure decision of what its answer means.
//
// Why the same connection: WAIT blocks until the replicas acknowledged every write made
// *on its own connection* before it, and answers how many did. On a fresh connection it has
// nothing to wait for and returns at once, proving nothing. Sent right after the script on
// the connection that carried it, it counts the replicas that have the grant or renewal (and
// every earlier write on that connection: another caller's command between them only makes
// WAIT wait for more, never for less).
#include <array>
#include <chrono>
#include <expected>
#include <string>
#include <string_view>
#include <system_error>

#include "fencelock/options.hpp"
#include "redis/reply.hpp"

namespace fencelock::detail {

/// How many replicas must acknowledge, and how long WAIT may wait for them. replicas 0: off.
struct ReplicaAck {
    unsigned replicas = 0;
    std::chrono::milliseconds timeout{0};

    bool on() const noexcept { return replicas > 0; }
};

ReplicaAck replica_ack(const AcquireOptions& options) noexcept;

/// The requirement of a batch carrying leases with `a` and `b`: the most replicas and the
/// longest timeout either asks for (each lease still compares the answer with its own count).
ReplicaAck combine(ReplicaAck a, ReplicaAck b) noexcept;

/// `WAIT numreplicas timeout`, with its argument strings owned here.
class WaitCommand {
public:
    explicit WaitCommand(ReplicaAck ack);
    std::array<std::string_view, 3> argv() const noexcept { return {"WAIT", replicas_, timeout_}; }

private:
    std::string replicas_;
    std::string timeout_;
};

/// WAIT's answer: the number of replicas that acknowledged, or the error its error reply maps
/// to (protocol_error for a reply that is not a non-negative integer).
std::expected<unsigned, std::error_code> decode_wait(const Reply& reply);

/// What a write confirmed by `acknowledged` means for a lease that asked for `ack`: no error
/// when enough replicas have it (or nothing was asked); not_replicated when fewer did; WAIT's
/// own error when it failed.
std::error_code replication_shortfall(ReplicaAck ack, const std::expected<unsigned, std::error_code>& acknowledged);

}  // namespace fencelock::detail
