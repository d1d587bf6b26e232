#pragma once
// Failures to reach or enter a server, said for people: which server, and why. A
// std::error_code cannot carry either, so they go to error_detail() / error_cause() (the
// CLI's `detail` and `code`); the code callers act on stays errc::unavailable or auth_failed.
#include <string>
#include <string_view>
#include <system_error>

#include "redis/topology.hpp"

namespace fencelock::detail {

/// The stable cause name (error_cause) of a failed connect or name lookup, from what the
/// socket layer said (hiredis's errstr): connection_refused, connect_timeout,
/// name_resolution_failed, or empty when it is none of those.
std::string_view connect_cause(std::string_view errstr);

/// "host:port", or "[v6]:port".
std::string server_name(const ServerAddress& server);

/// Records "<server>: <cause in words> (<errstr>)" for errc::unavailable and returns it.
std::error_code connect_failed(const ServerAddress& server, std::string_view errstr);

/// The server accepted the connection and did not answer the handshake within the connect
/// timeout (a TLS port, a stalled server, something that is not Redis).
std::error_code handshake_timed_out(const ServerAddress& server);

/// The server closed the connection before any reply to the handshake: most often a TLS
/// port spoken to in plaintext (it drops what is not a TLS hello).
std::error_code handshake_closed(const ServerAddress& server);

/// A connection hiredis closed before the handshake's replies: handshake_closed when the
/// server hung up (EOF, reset: what a TLS port does to plaintext), else connect_failed.
std::error_code connection_ended(const ServerAddress& server, std::string_view errstr);

/// Adds the server to the detail of a failed handshake (auth_failed, a refused SELECT...),
/// which the handshake recorded without knowing where it ran.
std::error_code locate_handshake_failure(std::error_code ec, const ServerAddress& server);

}  // namespace fencelock::detail
