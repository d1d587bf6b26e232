#include "redis/transport.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstring>
#include <vector>

#include "common/log.hpp"
#include "fencelock/error.hpp"
#include "redis/connect_failure.hpp"
#include "redis/tls_context.hpp"

namespace fencelock::detail {
namespace {

bool would_block(int e) noexcept { return e == EAGAIN || e == EWOULDBLOCK; }

// OpenSSL reads and writes the socket through this BIO: send(2) with MSG_NOSIGNAL (no SIGPIPE
// in an application thread, which OpenSSL's own socket BIO would raise with write(2)).
int bio_write(BIO* bio, const char* in, int size) {
    const int fd = static_cast<int>(reinterpret_cast<std::intptr_t>(BIO_get_data(bio)));
    BIO_clear_retry_flags(bio);
    for (;;) {
        const auto n = ::send(fd, in, static_cast<std::size_t>(size), MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n >= 0) return static_cast<int>(n);
        if (errno == EINTR) continue;
        if (would_block(errno)) BIO_set_retry_write(bio);
        return -1;
    }
}

int bio_read(BIO* bio, char* out, int size) {
    const int fd = static_cast<int>(reinterpret_cast<std::intptr_t>(BIO_get_data(bio)));
    BIO_clear_retry_flags(bio);
    for (;;) {
        const auto n = ::recv(fd, out, static_cast<std::size_t>(size), MSG_DONTWAIT);
        if (n >= 0) return static_cast<int>(n);  // 0: end of stream
        if (errno == EINTR) continue;
        if (would_block(errno)) BIO_set_retry_read(bio);
        return -1;
    }
}

long bio_ctrl(BIO*, int command, long, void*) { return command == BIO_CTRL_FLUSH ? 1 : 0; }

BIO_METHOD* socket_bio_method() {
    static BIO_METHOD* method = [] {
        BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "fencelock socket");
        BIO_meth_set_write(m, bio_write);
        BIO_meth_set_read(m, bio_read);
        BIO_meth_set_ctrl(m, bio_ctrl);
        return m;
    }();
    return method;
}

bool is_unix_path(const ServerAddress& server) { return server.port == 0 && server.host.starts_with('/'); }

void tune(int fd, bool tcp) {
    if (!tcp) return;
    const int on = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    // Keep-alive as hiredis set it (15 s idle, then probes): a vanished server is noticed.
    ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
    const int idle = 15, interval = 5, count = 3;
    ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
    ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
    ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
}

}  // namespace

struct Transport::State {
    enum class Phase { connecting, tls, open };

    ServerAddress server;
    TlsOptions tls;
    std::vector<sockaddr_storage> addresses;  // what the name resolved to, tried in order
    std::vector<socklen_t> lengths;
    std::size_t next = 0;
    int fd = -1;
    Phase phase = Phase::connecting;
    Want want = Want::write;
    std::shared_ptr<SSL_CTX> ctx;  // kept alive while ssl uses it
    SSL* ssl = nullptr;
    Failure failure;
    std::string last_errno_text;
    bool answered = false;      // the server's first bytes after the handshake were read
    bool read_starved = false;  // the last SSL_read wanted more bytes: what is buffered is no whole record

    ~State() {
        if (ssl != nullptr) SSL_free(ssl);
        if (fd >= 0) ::close(fd);
    }

    // Starts connect(2) to the next address; false when none is left (failure recorded).
    bool connect_next() {
        while (next < addresses.size()) {
            if (fd >= 0) ::close(fd);
            const auto& a = addresses[next];
            const socklen_t length = lengths[next];
            ++next;
            fd = ::socket(a.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
            if (fd < 0) {
                last_errno_text = std::strerror(errno);
                continue;
            }
            tune(fd, a.ss_family != AF_UNIX);
            if (::connect(fd, reinterpret_cast<const sockaddr*>(&a), length) == 0 || errno == EINPROGRESS) {
                phase = Phase::connecting;
                want = Want::write;
                return true;
            }
            last_errno_text = std::strerror(errno);
        }
        return false;
    }

    // The TLS session over the connected socket.
    bool begin_tls() {
        ssl = SSL_new(ctx.get());
        if (ssl == nullptr) return false;
        BIO* bio = BIO_new(socket_bio_method());
        if (bio == nullptr) return false;
        BIO_set_data(bio, reinterpret_cast<void*>(static_cast<std::intptr_t>(fd)));
        BIO_set_init(bio, 1);
        SSL_set_bio(ssl, bio, bio);
        const std::string& name = tls.server_name.empty() ? server.host : tls.server_name;
        if (!set_peer_name(ssl, name, tls.insecure)) return false;
        SSL_set_connect_state(ssl);
        phase = Phase::tls;
        return true;
    }

    // What SSL_get_error says after a call returned `rc` <= 0.
    Io tls_outcome(int rc, bool handshaking) {
        const int e = SSL_get_error(ssl, rc);
        if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
            want = e == SSL_ERROR_WANT_READ ? Want::read : Want::write;
            ERR_clear_error();
            return {Io::Status::again, 0};
        }
        // Closed before any answer after asking for a certificate: that is why (see describe_tls_failure).
        const bool refused_certificate = !answered && asked_for_missing_certificate(ssl);
        if (e == SSL_ERROR_ZERO_RETURN && !refused_certificate) {
            failure = {"the server closed the TLS session", ""};
            return {Io::Status::closed, 0};
        }
        if (e == SSL_ERROR_SYSCALL && ERR_peek_error() == 0 && errno == 0 && !handshaking && !refused_certificate) {
            failure = {"the server closed the connection", ""};
            return {Io::Status::closed, 0};
        }
        auto why = describe_tls_failure(ssl, e, answered);
        failure = {std::move(why.words), std::string(why.cause)};
        return {Io::Status::failed, 0};
    }
};

Transport::Transport() noexcept = default;
Transport::~Transport() = default;
Transport::Transport(Transport&&) noexcept = default;
Transport& Transport::operator=(Transport&&) noexcept = default;
Transport::Transport(std::unique_ptr<State> state) noexcept : state_(std::move(state)) {}

std::expected<Transport, std::error_code> Transport::start(const ServerAddress& server, const TlsOptions& tls) {
    auto s = std::make_unique<State>();
    s->server = server;
    s->tls = tls;
    if (tls.enabled) {
        auto ctx = tls_context(tls);
        if (!ctx) return std::unexpected(failed_at(server, ctx.error(), "tls_config"));
        s->ctx = std::move(*ctx);
        if (tls.insecure)
            log_event("warn", "tls_insecure",
                      {{"server", server_name(server)},
                       {"message", "tls_insecure is set: the server's certificate and name are not verified"}});
    }
    if (is_unix_path(server)) {
        sockaddr_un a{};
        if (server.host.size() >= sizeof a.sun_path)
            return std::unexpected(failed_at(server, "socket path too long", ""));
        a.sun_family = AF_UNIX;
        std::memcpy(a.sun_path, server.host.data(), server.host.size());
        sockaddr_storage stored{};
        std::memcpy(&stored, &a, sizeof a);
        s->addresses.push_back(stored);
        s->lengths.push_back(sizeof a);
    } else {
        addrinfo hints{};
        hints.ai_family = AF_UNSPEC;
        hints.ai_socktype = SOCK_STREAM;
        addrinfo* found = nullptr;
        const std::string port = std::to_string(server.port);
        if (const int rc = ::getaddrinfo(server.host.c_str(), port.c_str(), &hints, &found); rc != 0)
            return std::unexpected(
                connect_failed(server, std::string("name resolution failed: ") + ::gai_strerror(rc)));
        for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
            sockaddr_storage stored{};
            std::memcpy(&stored, a->ai_addr, a->ai_addrlen);
            s->addresses.push_back(stored);
            s->lengths.push_back(a->ai_addrlen);
        }
        ::freeaddrinfo(found);
    }
    if (!s->connect_next()) return std::unexpected(connect_failed(server, s->last_errno_text));
    return Transport(std::move(s));
}

Transport Transport::adopt(int fd, ServerAddress server) {
    auto s = std::make_unique<State>();
    s->server = std::move(server);
    s->fd = fd;
    s->phase = State::Phase::open;
    return Transport(std::move(s));
}

Transport::Io Transport::advance() {
    State& s = *state_;
    if (s.phase == State::Phase::connecting) {
        pollfd p{s.fd, POLLOUT, 0};
        if (::poll(&p, 1, 0) == 0) return {Io::Status::again, 0};
        int error = 0;
        socklen_t length = sizeof error;
        ::getsockopt(s.fd, SOL_SOCKET, SO_ERROR, &error, &length);
        if (error != 0) {
            s.last_errno_text = std::strerror(error);
            if (s.connect_next()) return {Io::Status::again, 0};
            connect_failed(s.server, s.last_errno_text);
            return {Io::Status::failed, 0};
        }
        if (!s.ctx) {
            s.phase = State::Phase::open;
            return {Io::Status::ok, 0};
        }
        if (!s.begin_tls()) {
            failed_at(s.server, "cannot start a TLS session (the server name?)", "tls_config");
            return {Io::Status::failed, 0};
        }
    }
    if (s.phase == State::Phase::tls) {
        ERR_clear_error();
        errno = 0;
        const int rc = SSL_connect(s.ssl);
        if (rc == 1) {
            s.phase = State::Phase::open;
            return {Io::Status::ok, 0};
        }
        const Io io = s.tls_outcome(rc, true);
        if (io.status != Io::Status::again) failed_at(s.server, s.failure.words, s.failure.cause);
        return io.status == Io::Status::again ? io : Io{Io::Status::failed, 0};
    }
    return {Io::Status::ok, 0};
}

bool Transport::is_open() const noexcept { return state_ && state_->phase == State::Phase::open; }

std::error_code Transport::timed_out() const {
    if (state_->phase == State::Phase::connecting) return connect_failed(state_->server, "connect timed out");
    return failed_at(state_->server,
                     "connected, but the TLS handshake got no answer within the connect timeout (a plaintext port? a "
                     "stalled server?)",
                     "handshake_timeout");
}

std::expected<Transport, std::error_code> Transport::open(const ServerAddress& server, const TlsOptions& tls,
                                                          clock::time_point deadline) {
    auto t = start(server, tls);
    if (!t) return t;
    for (;;) {
        const Io io = t->advance();
        if (io.ok()) return t;
        if (io.status == Io::Status::failed) return std::unexpected(make_error_code(errc::unavailable));
        if (!wait_for(t->fd(), t->want(), deadline)) return std::unexpected(t->timed_out());
    }
}

Transport::Io Transport::read_some(char* buffer, std::size_t size) {
    State& s = *state_;
    if (s.ssl != nullptr) {
        ERR_clear_error();
        errno = 0;
        const int n = SSL_read(s.ssl, buffer, static_cast<int>(std::min<std::size_t>(size, INT_MAX)));
        if (n > 0) {
            s.answered = true;
            s.read_starved = false;
            return {Io::Status::ok, static_cast<std::size_t>(n)};
        }
        const Io io = s.tls_outcome(n, false);
        s.read_starved = io.status == Io::Status::again && s.want == Want::read;
        return io;
    }
    for (;;) {
        const auto n = ::recv(s.fd, buffer, size, MSG_DONTWAIT);
        if (n > 0) return {Io::Status::ok, static_cast<std::size_t>(n)};
        if (n == 0) {
            s.failure = {"the server closed the connection", ""};
            return {Io::Status::closed, 0};
        }
        if (errno == EINTR) continue;
        if (would_block(errno)) {
            s.want = Want::read;
            return {Io::Status::again, 0};
        }
        s.failure = {std::strerror(errno), ""};
        return {errno == ECONNRESET ? Io::Status::closed : Io::Status::failed, 0};
    }
}

Transport::Io Transport::write_some(std::string_view bytes) {
    State& s = *state_;
    if (bytes.empty()) return {Io::Status::ok, 0};
    if (s.ssl != nullptr) {
        ERR_clear_error();
        errno = 0;
        const int n = SSL_write(s.ssl, bytes.data(), static_cast<int>(std::min<std::size_t>(bytes.size(), INT_MAX)));
        if (n > 0) return {Io::Status::ok, static_cast<std::size_t>(n)};
        return s.tls_outcome(n, false);
    }
    for (;;) {
        const auto n = ::send(s.fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n >= 0) return {Io::Status::ok, static_cast<std::size_t>(n)};
        if (errno == EINTR) continue;
        if (would_block(errno)) {
            s.want = Want::write;
            return {Io::Status::again, 0};
        }
        s.failure = {std::strerror(errno), ""};
        return {Io::Status::failed, 0};
    }
}

Transport::Want Transport::want() const noexcept { return state_->want; }
const Transport::Failure& Transport::last_failure() const noexcept { return state_->failure; }

bool Transport::holds_bytes() const noexcept {
    // With read-ahead, records past the one returned may sit in OpenSSL's buffer unprocessed
    // (SSL_has_pending); after a read that wanted more, what sits there is a partial record.
    const State& s = *state_;
    return s.ssl != nullptr && (SSL_pending(s.ssl) > 0 || (!s.read_starved && SSL_has_pending(s.ssl) == 1));
}

bool Transport::idle_and_open() {
    State& s = *state_;
    char byte;
    const auto n = ::recv(s.fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n < 0 && (would_block(errno) || errno == EINTR)) return !holds_bytes();
    if (n <= 0 || s.ssl == nullptr) return false;  // end of stream, a socket error, or unasked-for bytes
    // TLS: records without data (a session ticket, a key update) are fine; data is not.
    char sink[256];
    for (;;) {
        const Io io = read_some(sink, sizeof sink);
        if (io.status == Io::Status::again) return true;
        if (io.status != Io::Status::ok || io.bytes > 0) return false;
    }
}

void Transport::shutdown() noexcept {
    if (state_ && state_->fd >= 0) ::shutdown(state_->fd, SHUT_RDWR);
}

int Transport::fd() const noexcept { return state_ ? state_->fd : -1; }
const ServerAddress& Transport::server() const noexcept { return state_->server; }
bool Transport::uses_tls() const noexcept { return state_ && state_->ctx != nullptr; }

bool wait_for(int fd, Transport::Want want, Transport::clock::time_point deadline) noexcept {
    for (;;) {
        const auto now = Transport::clock::now();
        if (now >= deadline) return false;
        const auto ms = std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count();
        pollfd p{fd, static_cast<short>(want == Transport::Want::read ? POLLIN : POLLOUT), 0};
        const int n = ::poll(&p, 1, static_cast<int>(std::min<std::int64_t>(ms, INT_MAX)));
        if (n > 0) return true;  // errors and hang-ups too: the next call reports them
        if (n < 0 && errno != EINTR) return true;
    }
}

}  // namespace fencelock::detail
