#pragma once
#include <chrono>
#include <memory>

#include "fencelock/redis_url.hpp"
#include "redis/connection.hpp"

namespace fencelock::detail {

struct ConnectionSettings {
    RedisEndpoint endpoint;
    std::chrono::milliseconds connect_timeout;
    std::chrono::milliseconds command_timeout;
};

/// A blocking connection on hiredis's synchronous API. Connects lazily (TCP, AUTH, SELECT),
/// drops the socket after any transport error and reconnects on the next command.
std::unique_ptr<Connection> make_hiredis_connection(ConnectionSettings settings);

}  // namespace fencelock::detail
