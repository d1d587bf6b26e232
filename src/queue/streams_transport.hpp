#pragma once
// The Redis Streams transport: thin wrappers, one per script or command, over a
// detail::Connection. No decisions here; the worker decides what to call.
#include <cstdint>
#include <expected>
#include <optional>
#include <span>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "fencelock/queue.hpp"
#include "fencelock/result.hpp"
#include "queue/streams_codec.hpp"
#include "redis/connection.hpp"

namespace fencelock::detail {

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
    Result<void> ensure_group(Connection& c) const;
    /// A job to enqueue and its delay.
    struct QueuedRequest {
        Job job;
        milliseconds delay{0};
    };
    /// enqueue.lua once per job, in one pipelined round trip; the results in order. Any failed
    /// call fails the whole batch (the calls before it may have added their jobs).
    Result<std::vector<EnqueueResult>> enqueue(Connection& c, std::span<const QueuedRequest> jobs) const;
    /// XREADGROUP ... COUNT 1 BLOCK block STREAMS stream >. nullopt when nothing came. Creates
    /// the group when it is missing (and then returns nullopt).
    Result<std::optional<Entry>> read(Connection& c, const std::string& consumer, milliseconds block) const;
    struct Reclaimed {
        std::string cursor;
        std::optional<Entry> entry;
    };
    Result<Reclaimed> reclaim(Connection& c, const std::string& consumer, milliseconds min_idle,
                              const std::string& cursor) const;
    struct Promoted {
        std::size_t moved = 0;
        /// Time until the next delayed job is due (nullopt: none delayed).
        std::optional<milliseconds> next_due;
    };
    Result<Promoted> promote(Connection& c, std::size_t limit) const;
    /// complete.lua: false when the entry is no longer pending for `consumer`.
    Result<bool> complete(Connection& c, const std::string& consumer, const std::string& entry_id,
                          std::string_view counter) const;
    Result<bool> requeue(Connection& c, const std::string& consumer, const std::string& entry_id, const Job& job,
                         milliseconds delay, std::string_view counter) const;
    Result<bool> dead(Connection& c, const std::string& consumer, const std::string& entry_id,
                      const std::string& reason, const std::vector<std::string>& fields) const;
    /// heartbeat.lua over (consumer, entry id) pairs; returns the ids no longer pending for them.
    Result<std::vector<std::string>> heartbeat(Connection& c,
                                               const std::vector<std::pair<std::string, std::string>>& in_flight) const;
    Result<bool> leave(Connection& c, const std::string& consumer) const;
    Result<QueueStats> stats(Connection& c) const;
    Result<std::vector<DeadJob>> dead_jobs(Connection& c, std::size_t limit) const;
    Result<std::size_t> retry_dead(Connection& c, const std::optional<std::string>& id) const;
    /// list.lua: one page of the jobs in `state` after the cursor `after`.
    Result<JobPage> list(Connection& c, JobState state, const std::string& after, std::size_t limit) const;
    /// find.lua: the job with job id `id`, wherever it is.
    Result<std::optional<QueuedJob>> find(Connection& c, std::string_view id) const;
    struct Purged {
        std::size_t deleted = 0;
        /// Where the next call goes on; empty when `state` has nothing more to scan.
        std::string next_cursor;
    };
    /// purge.lua: deletes up to `limit` jobs in `state` (only the job `only` when not empty)
    /// from `cursor` on, counting them under `counter`.
    Result<Purged> purge(Connection& c, JobState state, const std::string& cursor, std::size_t limit,
                         std::string_view only, std::string_view counter) const;

private:
    QueueKeys keys_;
    std::string queue_;
};

}  // namespace fencelock::detail
