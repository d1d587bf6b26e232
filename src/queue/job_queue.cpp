// JobQueue: enqueue and the operator's views of a queue, on one connection.
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
    return JobQueue(std::unique_ptr<Impl>(
        new Impl{std::move(options), std::move(transport), {}, std::move(connection)}));
}

JobQueue::JobQueue(std::unique_ptr<Impl> impl) noexcept : impl_(std::move(impl)) {}
JobQueue::JobQueue(JobQueue&&) noexcept = default;
JobQueue& JobQueue::operator=(JobQueue&&) noexcept = default;
JobQueue::~JobQueue() = default;

const QueueOptions& JobQueue::options() const noexcept { return impl_->options; }

Result<EnqueueResult> JobQueue::enqueue(const EnqueueRequest& request) {
    if (request.idempotency_key.empty() || request.idempotency_key.size() > 256)
        throw std::invalid_argument("idempotency_key must be 1..256 bytes");
    if (request.delay < milliseconds::zero()) throw std::invalid_argument("delay must not be negative");
    // The job ends in a store: a name or key no store can hold is refused before Redis sees it.
    if (!validate_store_text(request.resource.str()) || !validate_store_text(request.idempotency_key))
        return std::unexpected(make_error_code(store_errc::invalid_input));
    const Job job{.id = detail::new_job_id(), .queue = impl_->options.queue, .resource = request.resource,
                  .idempotency_key = request.idempotency_key, .payload = request.payload,
                  .contention_attempts = 0, .business_attempts = 0, .infrastructure_attempts = 0,
                  .deliveries = 0, .last_error = {}};
    std::lock_guard lock(impl_->mutex);
    return impl_->transport.enqueue(*impl_->connection, job, request.delay);
}

Result<QueueStats> JobQueue::stats() {
    std::lock_guard lock(impl_->mutex);
    return impl_->transport.stats(*impl_->connection);
}

Result<std::vector<DeadJob>> JobQueue::dead(std::size_t limit) {
    std::lock_guard lock(impl_->mutex);
    return impl_->transport.dead_jobs(*impl_->connection, limit);
}

Result<std::size_t> JobQueue::retry_dead(const std::optional<std::string>& id) {
    std::lock_guard lock(impl_->mutex);
    return impl_->transport.retry_dead(*impl_->connection, id);
}

Result<std::size_t> JobQueue::promote_due(std::size_t limit) {
    std::lock_guard lock(impl_->mutex);
    auto p = impl_->transport.promote(*impl_->connection, limit);
    if (!p) return std::unexpected(p.error());
    return p->moved;
}

}  // namespace fencelock
