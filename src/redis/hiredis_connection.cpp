#include "redis/hiredis_connection.hpp"

#include <hiredis/hiredis.h>

#include <optional>
#include <string>
#include <vector>

#include "fencelock/error.hpp"
#include "redis/connect_failure.hpp"
#include "redis/handshake.hpp"

namespace fencelock::detail {
namespace {

using clock = std::chrono::steady_clock;

class HiredisConnection final : public Connection {
public:
    // The topology is fixed at construction, so every reconnect asks the same one.
    explicit HiredisConnection(ConnectionSettings s) : settings_(std::move(s)) {
        settings_.topology = topology_of(settings_);
    }

    std::expected<Reply, std::error_code> command(std::span<const std::string_view> argv) override {
        if (auto ec = ready()) return std::unexpected(ec);
        wire_->append(argv);
        auto replies = exchange(1);
        if (!replies) return std::unexpected(replies.error());
        leave_if_not_master(replies->front());
        return std::move(replies->front());
    }

    std::expected<std::vector<Reply>, std::error_code> pipeline(
        std::span<const std::vector<std::string_view>> commands) override {
        if (auto ec = ready()) return std::unexpected(ec);
        for (const auto& argv : commands) wire_->append(argv);
        auto replies = exchange(commands.size());
        if (!replies) return std::unexpected(replies.error());
        for (const Reply& r : *replies) leave_if_not_master(r);
        return std::move(*replies);
    }

private:
    // A server restart or idle-timeout close shows on an idle connection: catch it before
    // sending, so an idle connection's death costs no command an unknown outcome.
    std::error_code ready() {
        if (wire_ && (!wire_->transport().idle_and_open() || master_moved())) wire_.reset();
        if (wire_) return {};
        generation_ = settings_.topology->generation();  // before resolve(): a move during it counts
        auto wire = open_wire(settings_, server_);
        if (!wire) return wire.error();
        wire_.emplace(std::move(*wire));
        return {};
    }

    std::expected<std::vector<Reply>, std::error_code> exchange(std::size_t count) {
        auto replies = wire_->exchange(count, clock::now() + settings_.command_timeout);
        if (!replies) {
            // After a timeout or broken socket the stream may hold a late reply: never reuse it.
            const auto& why = wire_->transport().last_failure();
            remember_error_detail(replies.error(),
                                  server_name(server_) + ": " +
                                      (replies.error() == errc::reply_timeout
                                           ? std::string("no reply within the command timeout")
                                       : why.words.empty() ? std::string("connection lost")
                                                           : why.words),
                                  why.cause);
            wire_.reset();
        }
        return replies;
    }

    // READONLY, MASTERDOWN or LOADING from a server the topology named as master: it is not
    // one now (a failover), so the next command reconnects to whatever resolve() names then.
    // The caller still gets this reply (not_master / server_busy, retryable).
    void leave_if_not_master(const Reply& reply) {
        if (!wire_ || !settings_.topology->follows_master() || !asks_for_another_server(reply)) return;
        settings_.topology->report_failure(server_, errc::not_master);
        wire_.reset();
    }

    // The topology heard that the master moved since this connection was made.
    bool master_moved() const { return settings_.topology->generation() != generation_; }

    ConnectionSettings settings_;
    std::optional<Wire> wire_;
    ServerAddress server_;          ///< where wire_ is connected
    std::uint64_t generation_ = 0;  ///< the topology's generation when wire_ was made
};

// The handshake (redis/handshake.hpp) runs under the connect timeout, in one round trip; no
// command of the caller is sent yet, so any failure here means "nothing happened".
std::error_code handshake(Wire& wire, const ServerAddress& server, const RedisEndpoint& ep, HandshakeNeeds needs,
                          clock::time_point deadline) {
    const auto steps = handshake_steps(ep, needs);
    if (steps.empty()) return {};
    for (const auto& step : steps) wire.append(step.argv);
    const auto replies = wire.exchange(steps.size(), deadline);
    if (!replies) {
        if (replies.error() == errc::reply_timeout) return handshake_timed_out(server);
        const auto& why = wire.transport().last_failure();
        return handshake_ended(server, why.words, why.cause);
    }
    note_clock_offset(server_name(server), clock_offset_in(steps, *replies, std::chrono::system_clock::now()));
    const ErrorPlace place(server_name(server));
    return judge_handshake(steps, *replies);
}

}  // namespace

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

std::shared_ptr<Topology> topology_of(const ConnectionSettings& settings) {
    return settings.topology ? settings.topology : topology_for(settings.endpoint);
}

std::expected<Wire, std::error_code> open_wire(const ConnectionSettings& settings) {
    ServerAddress reached;
    return open_wire(settings, reached);
}

std::expected<Wire, std::error_code> open_wire(const ConnectionSettings& settings, ServerAddress& reached) {
    const auto topology = topology_of(settings);
    const auto server = topology->resolve();
    if (!server) return std::unexpected(server.error());
    reached = *server;
    auto failed = [&](std::error_code ec) {
        topology->report_failure(*server, ec);
        return std::unexpected(ec);
    };
    const auto deadline = clock::now() + settings.connect_timeout;
    auto transport = Transport::open(*server, settings.endpoint.tls, deadline);
    if (!transport) return failed(transport.error());
    Wire wire(std::move(*transport));
    if (auto ec = handshake(wire, *server, settings.endpoint, {.confirm_master = topology->follows_master()}, deadline))
        return failed(ec);
    return wire;
}

std::unique_ptr<Connection> make_hiredis_connection(ConnectionSettings settings) {
    return std::make_unique<HiredisConnection>(std::move(settings));
}

}  // namespace fencelock::detail
