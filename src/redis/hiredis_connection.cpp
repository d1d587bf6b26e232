#include "redis/hiredis_connection.hpp"

#include "redis/hiredis_context.hpp"
#include "redis/connect_failure.hpp"
#include "redis/handshake.hpp"

#include <hiredis/hiredis.h>
#include <fcntl.h>
#include <poll.h>

#include <cerrno>
#include <string>
#include <vector>

#include "fencelock/error.hpp"

namespace fencelock::detail {
namespace {

struct ReplyDeleter {
    void operator()(redisReply* r) const noexcept { freeReplyObject(r); }
};
using ReplyPtr = std::unique_ptr<redisReply, ReplyDeleter>;

class HiredisConnection final : public Connection {
public:
    // The topology is fixed at construction, so every reconnect asks the same one.
    explicit HiredisConnection(ConnectionSettings s) : settings_(std::move(s)) {
        settings_.topology = topology_of(settings_);
    }
    ~HiredisConnection() override { drop(); }

    std::expected<Reply, std::error_code> command(std::span<const std::string_view> argv) override {
        if (ctx_ != nullptr && (peer_closed() || master_moved())) drop();
        if (ctx_ == nullptr) {
            if (auto ec = connect()) return std::unexpected(ec);
        }
        auto replies = append_command(ctx_, argv) ? read_replies(ctx_, 1) : std::nullopt;
        if (!replies) {
            // After a timeout or broken socket the stream may hold a late reply: never reuse it.
            const std::error_code ec = transport_error();
            drop();
            return std::unexpected(ec);
        }
        leave_if_not_master(replies->front());
        return std::move(replies->front());
    }

    std::expected<std::vector<Reply>, std::error_code> pipeline(
        std::span<const std::vector<std::string_view>> commands) override {
        if (ctx_ != nullptr && (peer_closed() || master_moved())) drop();
        if (ctx_ == nullptr) {
            if (auto ec = connect()) return std::unexpected(ec);
        }
        for (const auto& argv : commands) append_command(ctx_, argv);
        auto replies = read_replies(ctx_, commands.size());
        if (!replies) {
            const std::error_code ec = transport_error();
            drop();
            return std::unexpected(ec);
        }
        for (const Reply& r : *replies) leave_if_not_master(r);
        return std::move(*replies);
    }

private:
    std::error_code transport_error() const {
        // hiredis reports a receive timeout as an I/O error with errno EAGAIN.
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ETIMEDOUT) return errc::reply_timeout;
        return errc::connection_lost;
    }

    // A server restart or idle-timeout close is visible as a readable socket with nothing to
    // read; catch it before sending so an idle connection's death costs no uncertain command.
    bool peer_closed() const {
        pollfd p{ctx_->fd, POLLIN, 0};
        return ::poll(&p, 1, 0) != 0;
    }

    // READONLY, MASTERDOWN or LOADING from a server the topology named as master: it is not
    // one now (a failover), so the next command reconnects to whatever resolve() names then.
    // The caller still gets this reply (not_master / server_busy, retryable).
    void leave_if_not_master(const Reply& reply) {
        if (ctx_ == nullptr || !settings_.topology->follows_master() || !asks_for_another_server(reply)) return;
        settings_.topology->report_failure(server_, errc::not_master);
        drop();
    }

    // The topology heard that the master moved since this connection was made.
    bool master_moved() const { return settings_.topology->generation() != generation_; }

    std::error_code connect() {
        generation_ = settings_.topology->generation();  // before resolve(): a move during it counts
        auto ctx = open_context(settings_, server_);
        if (!ctx) return ctx.error();
        ctx_ = ctx->release();
        return {};
    }

    void drop() noexcept {
        if (ctx_ != nullptr) redisFree(ctx_);
        ctx_ = nullptr;
    }

    ConnectionSettings settings_;
    redisContext* ctx_ = nullptr;
    ServerAddress server_;  ///< where ctx_ is connected
    std::uint64_t generation_ = 0;  ///< the topology's generation when ctx_ was made
};

}  // namespace


void ContextDeleter::operator()(redisContext* c) const noexcept {
    if (c != nullptr) redisFree(c);
}

namespace {

template <class Argv>
bool append_argv(redisContext* ctx, const Argv& argv) {
    std::vector<const char*> ptrs;
    std::vector<size_t> lens;
    ptrs.reserve(argv.size());
    lens.reserve(argv.size());
    for (const auto& a : argv) {
        ptrs.push_back(a.data());
        lens.push_back(a.size());
    }
    return redisAppendCommandArgv(ctx, static_cast<int>(argv.size()), ptrs.data(), lens.data()) == REDIS_OK;
}

}  // namespace

bool append_command(redisContext* ctx, std::span<const std::string_view> argv) { return append_argv(ctx, argv); }
bool append_command(redisContext* ctx, std::span<const std::string> argv) { return append_argv(ctx, argv); }

std::optional<std::vector<Reply>> read_replies(redisContext* ctx, std::size_t n) {
    std::vector<Reply> replies;
    replies.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
        void* raw = nullptr;
        errno = 0;
        if (redisGetReply(ctx, &raw) != REDIS_OK || raw == nullptr) return std::nullopt;
        ReplyPtr reply(static_cast<redisReply*>(raw));
        replies.push_back(convert(reply.get()));
    }
    return replies;
}

Reply convert(const redisReply* r) {
    switch (r->type) {
        case REDIS_REPLY_INTEGER: return Reply::make_integer(r->integer);
        case REDIS_REPLY_STRING: return Reply::make_string(std::string(r->str, r->len));
        case REDIS_REPLY_STATUS: return {Reply::Kind::status, 0, std::string(r->str, r->len), {}};
        case REDIS_REPLY_ERROR: return Reply::make_error(std::string(r->str, r->len));
        case REDIS_REPLY_ARRAY: {
            std::vector<Reply> elements;
            elements.reserve(r->elements);
            for (size_t i = 0; i < r->elements; ++i) elements.push_back(convert(r->element[i]));
            return Reply::make_array(std::move(elements));
        }
        default: return Reply::make_nil();
    }
}


namespace {

timeval to_timeval(std::chrono::milliseconds d) {
    return {static_cast<time_t>(d.count() / 1000), static_cast<suseconds_t>((d.count() % 1000) * 1000)};
}

// The handshake (redis/handshake.hpp) runs under the connect timeout, in one round trip; no
// command of the caller is sent yet, so any failure here means "nothing happened".
std::error_code handshake(redisContext* ctx, const ServerAddress& server, const RedisEndpoint& ep,
                          HandshakeNeeds needs) {
    const auto steps = handshake_steps(ep, needs);
    for (const auto& step : steps)
        if (!append_command(ctx, step.argv)) return connect_failed(server, "out of memory");
    const auto replies = read_replies(ctx, steps.size());
    if (replies) note_clock_offset(server_name(server), clock_offset_in(steps, *replies, std::chrono::system_clock::now()));
    if (!replies) {
        const std::string_view why = ctx->errstr;
        if (ctx->err == REDIS_ERR_EOF || why.find("reset by peer") != std::string_view::npos) return handshake_closed(server);
        return handshake_timed_out(server);
    }
    return locate_handshake_failure(judge_handshake(steps, *replies), server);
}

}  // namespace

std::shared_ptr<Topology> topology_of(const ConnectionSettings& settings) {
    return settings.topology ? settings.topology : topology_for(settings.endpoint);
}

std::expected<ContextPtr, std::error_code> open_context(const ConnectionSettings& settings) {
    ServerAddress reached;
    return open_context(settings, reached);
}

std::expected<ContextPtr, std::error_code> open_context(const ConnectionSettings& settings, ServerAddress& reached) {
    const auto topology = topology_of(settings);
    const auto server = topology->resolve();
    if (!server) return std::unexpected(server.error());
    reached = *server;
    auto failed = [&](std::error_code ec) {
        topology->report_failure(*server, ec);
        return std::unexpected(ec);
    };
    timeval tv = to_timeval(settings.connect_timeout);
    ContextPtr ctx(redisConnectWithTimeout(server->host.c_str(), server->port, tv));
    if (!ctx) return failed(connect_failed(*server, "out of memory"));
    if (ctx->err != 0) return failed(connect_failed(*server, ctx->errstr));
    // Child processes of the application must not inherit the lock connection (a CMD run by
    // `fencelock run` could otherwise keep Redis sockets open). hiredis 0.14 creates the
    // socket without SOCK_CLOEXEC, so set it now.
    ::fcntl(ctx->fd, F_SETFD, ::fcntl(ctx->fd, F_GETFD) | FD_CLOEXEC);
    redisSetTimeout(ctx.get(), tv);
    redisEnableKeepAlive(ctx.get());
    if (auto ec = handshake(ctx.get(), *server, settings.endpoint, {.confirm_master = topology->follows_master()}))
        return failed(ec);
    redisSetTimeout(ctx.get(), to_timeval(settings.command_timeout));
    return ctx;
}

std::unique_ptr<Connection> make_hiredis_connection(ConnectionSettings settings) {
    return std::make_unique<HiredisConnection>(std::move(settings));
}

}  // namespace fencelock::detail
