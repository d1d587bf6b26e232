#pragma once
#include <chrono>
#include <expected>
#include <memory>
#include <system_error>

#include "fencelock/redis_url.hpp"
#include "redis/connection.hpp"
#include "redis/topology.hpp"
#include "redis/wire.hpp"

namespace fencelock::detail {

struct ConnectionSettings {
    /// Credentials, database and handshake options (its host and port are used only through
    /// the topology when none is given).
    RedisEndpoint endpoint;
    std::chrono::milliseconds connect_timeout;
    std::chrono::milliseconds command_timeout;
    /// Which server each new connection reaches. Null: the endpoint's own (topology_for()).
    std::shared_ptr<Topology> topology{};
};

/// The topology of `settings`: its own, or the one its endpoint describes (a single server, or
/// the master its sentinels name).
std::shared_ptr<Topology> topology_of(const ConnectionSettings& settings);

/// A wire for blocking use: the transport open (TCP, a Unix socket or TLS) within
/// connect_timeout and the handshake done (redis/handshake.hpp). errc::unavailable (cause
/// recorded), auth_failed, not_master... otherwise; either way nothing of the caller's was
/// sent. `reached` is the server the topology named (set even when connecting failed).
std::expected<Wire, std::error_code> open_wire(const ConnectionSettings& settings, ServerAddress& reached);
std::expected<Wire, std::error_code> open_wire(const ConnectionSettings& settings);

/// A blocking connection over a Wire. Connects lazily, drops the connection after any
/// transport error and reconnects on the next command; each command is bounded by
/// command_timeout.
std::unique_ptr<Connection> make_hiredis_connection(ConnectionSettings settings);

}  // namespace fencelock::detail
