#pragma once
// The topology seam: which server a new connection goes to. Every connection asks its
// Topology at connect time, and tells it when a server failed it, so the lock logic never
// knows whether it talks to one server, a Sentinel-managed master or a Cluster shard. Two
// implementations: a single fixed server, and Sentinel (redis/sentinel_topology.hpp: ask the
// sentinels for the master, re-resolve after a failure or READONLY). Redis Cluster picks a
// server per command, not per connection, so it is a Connection instead
// (redis/cluster_connection.hpp), whose node connections each use a single_server().
#include <chrono>
#include <cstdint>
#include <expected>
#include <memory>
#include <string>
#include <system_error>

#include "fencelock/redis_url.hpp"

namespace fencelock::detail {

/// A TCP server (host, port), or a Unix socket (host: its path, port 0).
struct ServerAddress {
    std::string host;
    std::uint16_t port = 0;
    bool operator==(const ServerAddress&) const = default;
};

class Topology {
public:
    virtual ~Topology() = default;
    /// The server a connection opened now must reach; an error (errc::unavailable) when none
    /// can be named. Called from connection threads: implementations are thread-safe.
    virtual std::expected<ServerAddress, std::error_code> resolve() = 0;
    /// A connection to `server` failed with `ec` (could not connect, broke, or the server
    /// refused to serve: READONLY, MASTERDOWN...). The next resolve() may name another server.
    virtual void report_failure(const ServerAddress& server, std::error_code ec) noexcept = 0;
    /// True when the server resolve() names may stop being the master (a failover). Then each
    /// connection confirms with ROLE in its handshake that it reached the master, and leaves a
    /// server that answers READONLY, MASTERDOWN or LOADING to resolve() again. False for a
    /// fixed server: its connections behave as they always did.
    virtual bool follows_master() const noexcept { return false; }
    /// Moves on when the topology learns that the master changed (Sentinel's +switch-master).
    /// A connection made under an older generation leaves its server before its next command,
    /// even if that server still answers. Always 0 for a fixed server.
    virtual std::uint64_t generation() const noexcept { return 0; }
    /// From when the master resolve() named last may grant new leases. After a promotion that
    /// is RedisEndpoint::failover_grace after the sentinels saw it become master, so that a
    /// lease the old master granted without replicating it has run out before anyone else gets
    /// the lock. The clock's epoch (no wait) for a fixed server, with the grace off, or before
    /// the first resolve(); an acquirer checks again once its reply is back.
    virtual std::chrono::steady_clock::time_point grants_from() const noexcept { return {}; }
};

/// One server, always the same: the endpoint's host and port.
std::shared_ptr<Topology> single_server(const RedisEndpoint& endpoint);

/// The topology an endpoint describes: sentinel_topology() for a redis-sentinel:// endpoint,
/// otherwise single_server().
std::shared_ptr<Topology> topology_for(const RedisEndpoint& endpoint);

}  // namespace fencelock::detail
