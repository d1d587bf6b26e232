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

/// "host:port", "[v6]:port", or a Unix socket's path.
std::string server_name(const ServerAddress& server);

/// Records "<server>: <words>" with `cause` (may be empty) for errc::unavailable and returns it.
std::error_code failed_at(const ServerAddress& server, std::string_view words, std::string_view cause);

/// The words and cause of this thread's latest failed_at() (or of the helpers below, which
/// all end there), without the server: for code that reports a failure in its own words.
/// Unlike error_detail(), no other thread can have replaced it in between, and it is kept
/// under detail::UnheardFailures too.
struct ThreadFailure {
    std::string words, cause;
};
const ThreadFailure& this_threads_last_failure() noexcept;

/// Records "<server>: <cause in words> (<errstr>)" for errc::unavailable and returns it.
std::error_code connect_failed(const ServerAddress& server, std::string_view errstr);

/// The server accepted the connection and did not answer the handshake within the connect
/// timeout (a TLS port, a stalled server, something that is not Redis).
std::error_code handshake_timed_out(const ServerAddress& server);

/// The server closed the connection before any reply to the handshake: most often a TLS
/// port spoken to in plaintext (it drops what is not a TLS hello).
std::error_code handshake_closed(const ServerAddress& server);

/// A connection that ended before the handshake's replies, as the transport said why
/// (Transport::Failure): handshake_closed when the server hung up without a TLS reason (EOF,
/// reset: what a TLS port does to plaintext), else the transport's words and cause (a TLS
/// alert such as "certificate required" arrives on the first read).
std::error_code handshake_ended(const ServerAddress& server, std::string_view words, std::string_view cause);

/// errc::unavailable for a connection lost or given up on after it served (a reply timeout,
/// a reset, the client closing): records "<server>: <words>" with no cause, so that no older
/// cause is reported for it.
std::error_code lost_at(const ServerAddress& server, std::string_view words);

}  // namespace fencelock::detail
