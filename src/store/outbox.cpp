// The transactional outbox: reading and marking events, and the relay to Redis streams.
#include "fencelock/store_outbox.hpp"

#include <array>

#include "redis/cluster_connection.hpp"
#include "redis/hiredis_connection.hpp"
#include "store/sql.hpp"
#include "store/store_impl.hpp"

namespace fencelock {

using detail::Param;

StoreResult<std::vector<OutboxEvent>> FencedStore::pending_events(std::size_t limit) {
    auto s = impl_->pool.borrow();
    if (!s) return std::unexpected(s.error());
    auto r = (*s)->exec(detail::sql::pending, {Param(static_cast<std::int64_t>(limit))});
    if (!r) return std::unexpected(r.error());
    std::vector<OutboxEvent> events;
    events.reserve(r->rows.size());
    for (auto& row : r->rows) {
        events.push_back(OutboxEvent{static_cast<std::int64_t>(detail::parse_u64(row[0])), row[1].value_or(""),
                                     row[2].value_or(""), FencingToken(detail::parse_u64(row[3])), row[4].value_or(""),
                                     row[5].value_or("")});
    }
    return events;
}

StoreResult<std::size_t> FencedStore::mark_sent(std::span<const std::int64_t> seqs) {
    if (seqs.empty()) return std::size_t{0};
    auto s = impl_->pool.borrow();
    if (!s) return std::unexpected(s.error());
    detail::Session& session = **s;
    if (auto b = detail::begin(session, Isolation::read_committed); !b) return std::unexpected(b.error());
    std::size_t marked = 0;
    for (std::int64_t seq : seqs) {
        auto r = session.exec(detail::sql::mark_sent, {Param(seq)});
        if (!r) {
            detail::rollback(session);
            return std::unexpected(r.error());
        }
        marked += static_cast<std::size_t>(r->affected);
    }
    if (auto c = detail::commit(session); !c) return std::unexpected(c.error());
    return marked;
}

std::expected<void, OptionError> RelayOptions::validate() const {
    if (endpoint.uses_etcd())
        return std::unexpected(OptionError{
            "endpoint", "the outbox relays to Redis Streams: name a Redis server (etcd:// keeps locks only)"});
    if (connect_timeout <= milliseconds::zero())
        return std::unexpected(OptionError{"connect_timeout", "must be positive"});
    if (command_timeout <= milliseconds::zero())
        return std::unexpected(OptionError{"command_timeout", "must be positive"});
    if (batch_size < 1) return std::unexpected(OptionError{"batch_size", "must be at least 1"});
    return {};
}

struct OutboxRelay::Impl {
    FencedStore* store;
    RelayOptions options;
    std::unique_ptr<detail::Connection> redis;
};

std::expected<OutboxRelay, OptionError> OutboxRelay::create(FencedStore& store, RelayOptions options) {
    if (auto ok = options.validate(); !ok) return std::unexpected(ok.error());
    auto redis = detail::make_endpoint_connection(
        detail::ConnectionSettings{options.endpoint, options.connect_timeout, options.command_timeout},
        detail::make_hiredis_connection);
    return OutboxRelay(std::make_unique<Impl>(Impl{&store, std::move(options), std::move(redis)}));
}

OutboxRelay::OutboxRelay(std::unique_ptr<Impl> impl) noexcept : impl_(std::move(impl)) {}
OutboxRelay::OutboxRelay(OutboxRelay&&) noexcept = default;
OutboxRelay& OutboxRelay::operator=(OutboxRelay&&) noexcept = default;
OutboxRelay::~OutboxRelay() = default;

/*
 * Why delivery is at-least-once and never lost: an event row exists only if its transaction
 * committed (it was inserted inside it). The relay marks a row sent only after Redis has
 * acknowledged that row's XADD, so every crash, timeout or error leaves unacknowledged rows
 * unsent and the next pass publishes them again. A timeout after XADD was sent may have
 * appended the entry anyway: that is the duplicate consumers remove by event_id. Nothing is
 * ever marked sent without having been acknowledged, so nothing is lost.
 */
StoreResult<std::size_t> OutboxRelay::relay_once() {
    auto events = impl_->store->pending_events(impl_->options.batch_size);
    if (!events) return std::unexpected(events.error());
    std::vector<std::int64_t> published;
    std::optional<StoreError> failure;
    for (const OutboxEvent& e : *events) {
        const std::string fence = std::to_string(e.fence.value());
        const std::array<std::string_view, 11> argv{"XADD",     e.stream, "*",   "event_id", e.id,     "resource",
                                                    e.resource, "fence",  fence, "payload",  e.payload};
        auto reply = impl_->redis->command(argv);
        if (!reply) {
            failure = StoreError{reply.error(), "XADD " + e.stream + ": " + reply.error().message()};
            break;
        }
        if (reply->kind == detail::Reply::Kind::error) {
            failure = StoreError{detail::error_from_reply(reply->str), "XADD " + e.stream + ": " + reply->str};
            break;
        }
        published.push_back(e.seq);
    }
    auto marked = impl_->store->mark_sent(published);
    if (failure) return std::unexpected(*failure);
    if (!marked) return std::unexpected(marked.error());
    return published.size();
}

}  // namespace fencelock
