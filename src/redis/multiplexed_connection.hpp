#pragma once
// One socket shared by many threads, with automatic pipelining. See async_loop.hpp for how
// the loop batches and what a caller gets back when the connection fails.
#include <cstdint>
#include <memory>
#include <optional>

#include "redis/hiredis_connection.hpp"

namespace fencelock::detail {

/// A thread-safe connection on hiredis's asynchronous API: any number of threads may call
/// command() and pipeline() at once on the same object. Each call blocks until its replies
/// come or its command_timeout passes (counted from the call, or from the moment the
/// connection became ready if it had to connect). Connects lazily like the blocking
/// connection (TCP, AUTH, SELECT under connect_timeout) and reconnects after a failure.
///
/// Error codes are those of the blocking connection: unavailable when the command was not
/// written, reply_timeout / connection_lost when it was (the outcome is unknown), auth_failed
/// when AUTH was refused. A timeout drops the connection, so no late reply is ever matched to
/// another caller; every other command written on it fails with an unknown outcome.
///
/// Sharing the socket means a command that changes the connection would change it for every
/// caller: SELECT, AUTH, HELLO, RESET, QUIT, CLIENT REPLY, pub/sub, MONITOR and WATCH are
/// refused with protocol_error before anything is sent, and a transaction (MULTI ... EXEC)
/// must open and close within one pipeline() call. Blocking commands (BLPOP, XREAD BLOCK,
/// WAIT) hold up every caller behind them: give them a connection of their own. (Replica
/// acknowledgement sends WAIT here on purpose: it must follow the write on the same connection;
/// AcquireOptions::replica_timeout bounds the hold-up.)
///
/// A caller that finds the connection idle (nothing queued or in flight) does its round trip
/// on its own thread, without waking the loop (AsyncLoop::run_here); callers that come meanwhile
/// queue and leave together through the loop. The errors above hold on either path.
///
/// The process needs no SIGPIPE handling for this connection: its loop thread blocks signals,
/// and a caller's thread writes with send(..., MSG_NOSIGNAL).
std::unique_ptr<Connection> make_multiplexed_connection(ConnectionSettings settings);

/// Counters of one multiplexed connection, for tests and benchmarks.
struct MultiplexedStats {
    std::uint64_t requests = 0;  ///< command() and pipeline() calls accepted
    std::uint64_t commands = 0;  ///< callers' commands handed to the socket (no AUTH/SELECT)
    std::uint64_t writes = 0;    ///< write(2) calls that sent bytes, handshakes included
    std::uint64_t connects = 0;  ///< connection attempts
    /// Requests the calling thread wrote and read itself (the borrowed socket), among `requests`.
    std::uint64_t borrowed = 0;
    /// Times the loop thread woke from poll(2): the hand-offs the borrowed socket saves show here.
    std::uint64_t loop_turns = 0;
    /// At the time of the call: the connection is idle and the next caller borrows the socket.
    bool parked = false;
};

/// The counters of `c` if make_multiplexed_connection made it, otherwise nullopt.
std::optional<MultiplexedStats> multiplexed_stats(const Connection& c);

}  // namespace fencelock::detail
