#pragma once
// The one byte stream under every Redis connection: plain TCP, a Unix socket, or TLS over TCP
// (OpenSSL 3). The blocking connection, the multiplexed loop and its borrowed socket, the release
// subscriber, sentinel queries and cluster nodes all open a Transport; hiredis is kept only to
// parse replies (redisReader), so no connection has socket code of its own.
//
// Non-blocking throughout. Opening is a step machine (start(), then advance() whenever the
// socket shows what want() asks for) so the event loop never blocks on a connect or a TLS
// handshake; open() drives it with poll(2) for blocking callers. Reads and writes return
// `again` with what to poll for: TLS may need to write while reading and read while writing
// (SSL_ERROR_WANT_WRITE / WANT_READ), which want() reports.
//
// Signals. Every write is send(2) with MSG_NOSIGNAL, TLS included (OpenSSL writes through a
// BIO of ours, not its socket BIO's write(2)): a peer that reset the connection never raises
// SIGPIPE in an application thread.
//
// Failures name the server and the cause (redis/connect_failure.hpp): refused, timed out,
// name not resolved, and for TLS the verification reason (unknown CA, expired, hostname
// mismatch), a client certificate the server required, or a plaintext server.
#include <chrono>
#include <cstddef>
#include <expected>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>

#include "fencelock/redis_url.hpp"
#include "redis/topology.hpp"

namespace fencelock::detail {

class Transport {
public:
    using clock = std::chrono::steady_clock;
    /// What to poll(2) the socket for before the next call can progress.
    enum class Want { read, write };

    /// The outcome of one non-blocking step.
    struct Io {
        enum class Status { ok, again, closed, failed };
        Status status = Status::ok;
        std::size_t bytes = 0;  ///< moved by a read or write (status ok)
        bool ok() const noexcept { return status == Status::ok; }
    };

    Transport() noexcept;
    ~Transport();
    Transport(Transport&&) noexcept;
    Transport& operator=(Transport&&) noexcept;

    /// Begins connecting to `server` (a Unix socket when its host is a path) with TLS when
    /// `tls.enabled`. Resolving the name blocks, as getaddrinfo(3) does; nothing else does.
    /// errc::unavailable (detail and cause recorded) when the name does not resolve, no socket
    /// can be made or the TLS settings cannot be loaded.
    static std::expected<Transport, std::error_code> start(const ServerAddress& server, const TlsOptions& tls);
    /// start() and advance() until open or `deadline`: errc::unavailable on failure, cause
    /// connect_timeout / handshake_timeout when the deadline passed.
    static std::expected<Transport, std::error_code> open(const ServerAddress& server, const TlsOptions& tls,
                                                          clock::time_point deadline);
    /// A transport over an already connected plain socket (tests).
    static Transport adopt(int fd, ServerAddress server);

    /// Moves an opening transport on: ok once connected (and the TLS handshake is done),
    /// again (poll for want()), or failed (errc::unavailable recorded with the cause).
    Io advance();
    /// Whether open: advance() returned ok.
    bool is_open() const noexcept;
    /// Records why opening did not finish by now (connect_timeout or handshake_timeout).
    std::error_code timed_out() const;

    /// Non-blocking read into `buffer`: ok with bytes > 0, again (poll for want()), closed
    /// (end of stream, or a TLS close), or failed (the failure recorded as the detail of
    /// errc::connection_lost: TLS alerts such as "certificate required" arrive here).
    Io read_some(char* buffer, std::size_t size);
    /// Non-blocking write of a prefix of `bytes`: ok with bytes > 0, again, or failed.
    /// With TLS, a write that returned again must be retried with the same bytes first.
    Io write_some(std::string_view bytes);
    /// What the last `again` waits for.
    Want want() const noexcept;

    /// Why the last read or write ended the stream (closed or failed), in words and as an
    /// error_cause() name (empty when it has none: a plain close or reset).
    struct Failure {
        std::string words;
        std::string cause;
    };
    const Failure& last_failure() const noexcept;

    /// True when bytes were read from the socket and not yet returned (TLS buffers records):
    /// poll(2) does not show them, so read_some() before polling.
    bool holds_bytes() const noexcept;
    /// On an idle connection, without blocking: false when the peer closed it or sent bytes
    /// nobody asked for (do not write). TLS records that carry no data (session tickets) are
    /// read and ignored.
    bool idle_and_open();

    /// Ends the connection for reading and writing, from any thread (unblocks a poll on it).
    void shutdown() noexcept;

    int fd() const noexcept;
    const ServerAddress& server() const noexcept;
    bool uses_tls() const noexcept;

    struct State;

private:
    explicit Transport(std::unique_ptr<State> state) noexcept;
    std::unique_ptr<State> state_;
};

/// Waits until `fd` shows `want` or `deadline` passes; false on the deadline. Retries EINTR.
bool wait_for(int fd, Transport::Want want, Transport::clock::time_point deadline) noexcept;

}  // namespace fencelock::detail
