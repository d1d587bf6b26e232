#pragma once
// The Redis Streams transport: thin wrappers, one per script or command, over a
// detail::Connection. No decisions here; the worker decides what to call.
#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "fencelock/queue.hpp"
#include "queue/streams_codec.hpp"
#include "redis/connection.hpp"

namespace fencelock::detail {

template <typename T>
using QResult = std::expected<T, std::error_code>;

/// A stream entry delivered to (or reclaimed by) a consumer.
struct Entry {
    std::string entry_id;
    std::uint32_t delivery_count = 1;
    Reply fields;
};

class StreamsTransport {
public:
    StreamsTransport(QueueKeys keys, std::string queue) : keys_(std::move(keys)), queue_(std::move(queue)) {}

    const QueueKeys& keys() const noexcept { return keys_; }
    const std::string& queue() const noexcept { return queue_; }

    /// XGROUP CREATE stream workers 0 MKSTREAM; an existing group is fine.
    QResult<void> ensure_group(Connection& c) const;
    QResult<EnqueueResult> enqueue(Connection& c, const Job& job, milliseconds delay) const;
    /// XREADGROUP ... COUNT 1 BLOCK block STREAMS stream >. nullopt when nothing came. Creates
    /// the group when it is missing (and then returns nullopt).
    QResult<std::optional<Entry>> read(Connection& c, const std::string& consumer, milliseconds block) const;
    struct Reclaimed {
        std::string cursor;
        std::optional<Entry> entry;
    };
    QResult<Reclaimed> reclaim(Connection& c, const std::string& consumer, milliseconds min_idle,
                               const std::string& cursor) const;
    struct Promoted {
        std::size_t moved = 0;
        /// Time until the next delayed job is due (nullopt: none delayed).
        std::optional<milliseconds> next_due;
    };
    QResult<Promoted> promote(Connection& c, std::size_t limit) const;
    /// complete.lua: false when the entry is no longer pending for `consumer`.
    QResult<bool> complete(Connection& c, const std::string& consumer, const std::string& entry_id,
                           std::string_view counter) const;
    QResult<bool> requeue(Connection& c, const std::string& consumer, const std::string& entry_id, const Job& job,
                          milliseconds delay, std::string_view counter) const;
    QResult<bool> dead(Connection& c, const std::string& consumer, const std::string& entry_id,
                       const std::string& reason, const std::vector<std::string>& fields) const;
    /// heartbeat.lua over (consumer, entry id) pairs; returns the ids no longer pending for them.
    QResult<std::vector<std::string>> heartbeat(Connection& c,
                                                const std::vector<std::pair<std::string, std::string>>& in_flight) const;
    QResult<bool> leave(Connection& c, const std::string& consumer) const;
    QResult<QueueStats> stats(Connection& c) const;
    QResult<std::vector<DeadJob>> dead_jobs(Connection& c, std::size_t limit) const;
    QResult<std::size_t> retry_dead(Connection& c, const std::optional<std::string>& id) const;

private:
    QueueKeys keys_;
    std::string queue_;
};

}  // namespace fencelock::detail
