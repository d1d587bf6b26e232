#pragma once
// Blocking I/O on a Transport with a deadline: what a caller's own thread does on a
// multiplexed connection's socket while the event loop lends it (redis/async_loop.hpp, "The
// borrowed socket"), and what every blocking connection does (redis/wire.hpp). Each wait is a
// poll(2) bounded by the deadline; reads and writes are the transport's (send(2) with
// MSG_NOSIGNAL, TLS through it), so no SIGPIPE reaches a caller's thread. Replies are parsed by
// the connection's own hiredis reader, fed what the transport read.
//
// What the outcomes mean is not decided here: the caller knows how many of its bytes left
// (Sent::bytes), and the connection's InflightLedger turns that into "not written" or
// "outcome unknown". With TLS, bytes count once their record is written whole: a record cut
// short by a failure cannot be decrypted, so the server never runs what it carries.
#include <chrono>
#include <cstddef>
#include <expected>
#include <string_view>
#include <system_error>
#include <vector>

#include "redis/reply.hpp"
#include "redis/transport.hpp"

struct redisReader;

namespace fencelock::detail::blocking_io {

using clock = std::chrono::steady_clock;

/// What an idle connection's socket shows before a request is written to it.
enum class IdleSocket {
    quiet,   ///< nothing to read: the connection is usable
    closed,  ///< the peer closed or reset it, or sent bytes nobody asked for: do not write
};

/// Looks at the transport without waiting (Transport::idle_and_open). Catching a close here,
/// before writing, keeps an idle connection's death from costing a command an unknown outcome
/// (the blocking connection does the same check).
IdleSocket look(Transport& transport) noexcept;

/// What send_all() did.
struct Sent {
    std::size_t bytes = 0;  ///< bytes that reached the socket, from the start of the buffer
    std::size_t calls = 0;  ///< send(2) calls that wrote at least one byte
    /// Empty when every byte was written; errc::reply_timeout when `deadline` passed first,
    /// errc::connection_lost when the socket failed (reset, closed for writing).
    std::error_code error;
};

/// Writes `bytes` to the transport, waiting for room until `deadline`. Never raises SIGPIPE.
Sent send_all(Transport& transport, std::string_view bytes, clock::time_point deadline) noexcept;

/// Reads from the transport into `reader` until it yields `count` replies, waiting (poll POLLIN) until
/// `deadline`. Errors: errc::reply_timeout when the deadline passed first,
/// errc::connection_lost on end of stream, a socket error or bytes that are not RESP.
/// Interrupted system calls are retried.
std::expected<std::vector<Reply>, std::error_code> read_replies(Transport& transport, redisReader& reader,
                                                                std::size_t count, clock::time_point deadline);

/// Whether `reader` holds bytes beyond the replies taken from it (a reply nobody asked for).
bool holds_more(const redisReader& reader) noexcept;

}  // namespace fencelock::detail::blocking_io
