#pragma once
// The seam between the lock logic and the network. The client only ever sees this interface,
// so pipelining, Sentinel or Cluster connections can replace the plain one without touching
// the protocol code.
#include <expected>
#include <memory>
#include <span>
#include <string_view>
#include <system_error>
#include <vector>

#include "redis/reply.hpp"

namespace fencelock::detail {

class Connection {
public:
    virtual ~Connection() = default;
    /// Sends one command and waits for its reply, bounded by the command timeout. Error
    /// replies come back as Reply::Kind::error values; std::error_code is for transport
    /// failures (errc::unavailable when nothing was sent, reply_timeout / connection_lost
    /// when the outcome is unknown).
    virtual std::expected<Reply, std::error_code> command(std::span<const std::string_view> argv) = 0;

    /// Sends all commands back to back and then reads all replies: one round trip for the
    /// batch. The replies are in command order. A transport error fails the whole batch, and
    /// then every command in it has an unknown outcome.
    virtual std::expected<std::vector<Reply>, std::error_code> pipeline(
        std::span<const std::vector<std::string_view>> commands) = 0;
};

}  // namespace fencelock::detail
