#pragma once
#include <chrono>
#include <memory>

#include "fencelock/redis_url.hpp"
#include "redis/connection.hpp"
#include "redis/topology.hpp"

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

/// A blocking connection on hiredis's synchronous API. Connects lazily (TCP, AUTH, SELECT),
/// drops the socket after any transport error and reconnects on the next command.
std::unique_ptr<Connection> make_hiredis_connection(ConnectionSettings settings);

}  // namespace fencelock::detail
