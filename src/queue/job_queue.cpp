// JobQueue: enqueue and the operator's views of a queue, on one connection.
#include <limits>
#include <mutex>
#include <stdexcept>

#include "fencelock/queue.hpp"
#include "fencelock/store_error.hpp"
#include "fencelock/store_text.hpp"
#include "queue/streams_transport.hpp"
#include "redis/cluster_connection.hpp"
#include "redis/hiredis_connection.hpp"

namespace fencelock {

struct JobQueue::Impl {
    QueueOptions options;
    detail::StreamsTransport transport;
    std::mutex mutex;
    std::unique_ptr<detail::Connection> connection;
};

std::expected<JobQueue, OptionError> JobQueue::create(QueueOptions options) {
    if (auto ok = options.validate(); !ok) return std::unexpected(ok.error());
    auto connection = detail::make_endpoint_connection(
        detail::ConnectionSettings{options.endpoint, options.connect_timeout, options.command_timeout},
        detail::make_hiredis_connection);
    detail::StreamsTransport transport(detail::queue_keys(options.key_prefix, options.queue), options.queue);
    return JobQueue(
        std::unique_ptr<Impl>(new Impl{std::move(options), std::move(transport), {}, std::move(connection)}));
}

JobQueue::JobQueue(std::unique_ptr<Impl> impl) noexcept : impl_(std::move(impl)) {}
JobQueue::JobQueue(JobQueue&&) noexcept = default;
JobQueue& JobQueue::operator=(JobQueue&&) noexcept = default;
JobQueue::~JobQueue() = default;

const QueueOptions& JobQueue::options() const noexcept { return impl_->options; }

namespace {

/// The job an enqueue request describes, once the request is known valid: throws
/// std::invalid_argument for a key outside 1..256 bytes or a negative delay; nullopt for a
/// resource name or key that is not store text.
std::optional<detail::StreamsTransport::QueuedRequest> new_job(const std::string& queue,
                                                               const EnqueueRequest& request) {
    if (request.idempotency_key.empty() || request.idempotency_key.size() > 256)
        throw std::invalid_argument("idempotency_key must be 1..256 bytes");
    if (request.delay < milliseconds::zero()) throw std::invalid_argument("delay must not be negative");
    // The job ends in a store: a name or key no store can hold is refused before Redis sees it.
    if (!validate_store_text(request.resource.str()) || !validate_store_text(request.idempotency_key))
        return std::nullopt;
    return detail::StreamsTransport::QueuedRequest{Job{.id = detail::new_job_id(),
                                                       .queue = queue,
                                                       .resource = request.resource,
                                                       .idempotency_key = request.idempotency_key,
                                                       .payload = request.payload,
                                                       .contention_attempts = 0,
                                                       .business_attempts = 0,
                                                       .infrastructure_attempts = 0,
                                                       .deliveries = 0,
                                                       .last_error = {}},
                                                   request.delay};
}

}  // namespace

Result<EnqueueResult> JobQueue::enqueue(const EnqueueRequest& request) {
    auto r = enqueue_batch(std::span<const EnqueueRequest>(&request, 1));
    if (!r) return std::unexpected(r.error());
    return std::move(r->front());
}

Result<std::vector<EnqueueResult>> JobQueue::enqueue_batch(std::span<const EnqueueRequest> requests) {
    std::vector<detail::StreamsTransport::QueuedRequest> jobs;
    jobs.reserve(requests.size());
    for (const auto& request : requests) {
        auto job = new_job(impl_->options.queue, request);
        if (!job) return std::unexpected(make_error_code(store_errc::invalid_input));
        jobs.push_back(std::move(*job));
    }
    if (jobs.empty()) return std::vector<EnqueueResult>{};
    std::lock_guard lock(impl_->mutex);
    return impl_->transport.enqueue(*impl_->connection, jobs);
}

Result<QueueStats> JobQueue::stats() {
    std::lock_guard lock(impl_->mutex);
    return impl_->transport.stats(*impl_->connection);
}

Result<std::vector<DeadJob>> JobQueue::dead(std::size_t limit) {
    std::lock_guard lock(impl_->mutex);
    return impl_->transport.dead_jobs(*impl_->connection, limit);
}

namespace {
// The scripts read an empty id as "every job": a caller's empty string must not mean that.
void require_job_id(std::string_view id) {
    if (id.empty()) throw std::invalid_argument("a job id is required (empty would name every dead job)");
}
}  // namespace

Result<std::size_t> JobQueue::retry_dead(const std::optional<std::string>& id) {
    if (id) require_job_id(*id);
    std::lock_guard lock(impl_->mutex);
    return impl_->transport.retry_dead(*impl_->connection, id);
}

Result<std::size_t> JobQueue::promote_due(std::size_t limit) {
    std::lock_guard lock(impl_->mutex);
    auto p = impl_->transport.promote(*impl_->connection, limit);
    if (!p) return std::unexpected(p.error());
    return p->moved;
}

Result<JobPage> JobQueue::list(const ListRequest& request) {
    if (request.limit < 1 || request.limit > max_page_size)
        throw std::invalid_argument("limit must be 1.." + std::to_string(max_page_size));
    if (!valid_cursor(request.state, request.after)) throw std::invalid_argument("not a cursor of this state");
    std::lock_guard lock(impl_->mutex);
    return impl_->transport.list(*impl_->connection, request.state, request.after, request.limit);
}

Result<std::optional<QueuedJob>> JobQueue::find(std::string_view id) {
    std::lock_guard lock(impl_->mutex);
    return impl_->transport.find(*impl_->connection, id);
}

Result<DeadJobChange> JobQueue::retry(std::string_view id) {
    require_job_id(id);
    auto n = retry_dead(std::string(id));
    if (!n) return std::unexpected(n.error());
    if (*n > 0) return DeadJobChange::done;
    return not_dead_or_missing(id);
}

Result<DeadJobChange> JobQueue::discard(std::string_view id) {
    require_job_id(id);
    {
        std::lock_guard lock(impl_->mutex);
        // One call reads the whole dead-letter stream: the job is found and deleted atomically.
        auto p = impl_->transport.purge(*impl_->connection, JobState::dead, "", std::numeric_limits<int>::max(), id,
                                        "discarded");
        if (!p) return std::unexpected(p.error());
        if (p->deleted > 0) return DeadJobChange::done;
    }
    return not_dead_or_missing(id);
}

Result<DeadJobChange> JobQueue::not_dead_or_missing(std::string_view id) {
    // Only says why nothing changed: a job that died just now is reported not_dead, and a
    // second call then finds it dead.
    auto found = find(id);
    if (!found) return std::unexpected(found.error());
    return *found ? DeadJobChange::not_dead : DeadJobChange::not_found;
}

Result<std::size_t> JobQueue::purge(JobState state) {
    if (state == JobState::running) throw std::invalid_argument("running jobs cannot be purged");
    // Chunks keep each script short: Redis serves nobody else while a script runs.
    constexpr std::size_t chunk = 1000;
    std::size_t total = 0;
    std::string cursor;
    for (;;) {
        std::lock_guard lock(impl_->mutex);
        auto p = impl_->transport.purge(*impl_->connection, state, cursor, chunk, "", "purged");
        if (!p) return std::unexpected(p.error());
        total += p->deleted;
        if (p->next_cursor.empty()) return total;
        cursor = std::move(p->next_cursor);
    }
}

Result<EnqueueResult> enqueue(const QueueOptions& options, const EnqueueRequest& request) {
    auto queue = JobQueue::create(options);
    if (!queue) throw std::invalid_argument(queue.error().field + ": " + queue.error().message);
    return queue->enqueue(request);
}

}  // namespace fencelock
