#pragma once
/// The worker queue runtime on Redis Streams (docs/QUEUE.md).
///
/// JobQueue enqueues and administers a queue; QueueWorker runs N concurrent slots that take
/// jobs from the queue's consumer group and hand each to the JobProcessor. Keys of queue Q, all
/// with the hash tag {Q} so each script touches one Redis Cluster slot:
///
///   queue:{Q}:stream   stream, consumer group "workers": ready and in-flight jobs
///   queue:{Q}:delayed  sorted set of jobs waiting for a retry or a --delay, score = due (ms)
///   queue:{Q}:dead     stream of dead-lettered jobs with their reason
///   queue:{Q}:keys     hash idempotency key -> job id (enqueue deduplication)
///   queue:{Q}:stats    hash of counters (completed, duplicates, retries...)

#include <chrono>
#include <cstdint>
#include <expected>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "fencelock/client.hpp"
#include "fencelock/queue_job.hpp"
#include "fencelock/queue_observer.hpp"
#include "fencelock/queue_processor.hpp"
#include "fencelock/redis_url.hpp"

namespace fencelock {

/// Checks a queue name: 1..200 printable ASCII characters without spaces or braces (the name
/// is the Cluster hash tag of the queue's keys).
std::expected<void, InvalidName> validate_queue_name(std::string_view name);

/// Where a queue lives.
struct QueueOptions {
    /// Queue name (see validate_queue_name). Required: no default.
    std::string queue{};
    /// Redis server. Default 127.0.0.1:6379.
    RedisEndpoint endpoint{};
    /// Prepended to every key, as ClientOptions::key_prefix. No braces. Default empty.
    std::string key_prefix{};
    /// Limit for connecting. Default 1 s.
    milliseconds connect_timeout{1000};
    /// Limit for one command's reply (a blocking read adds its block time). Default 1 s.
    milliseconds command_timeout{1000};

    std::expected<void, OptionError> validate() const;
};

struct EnqueueRequest {
    /// Store text (valid UTF-8 without NUL), like every name a store guards.
    ResourceName resource;
    /// 1..256 bytes of store text. A second enqueue with a known key returns the first job's id.
    std::string idempotency_key;
    /// JSON text. Default "{}".
    std::string payload = "{}";
    /// Ready after this long (Redis's clock). Default 0: ready now.
    milliseconds delay{0};
};

struct EnqueueResult {
    std::string id;
    /// True when the key was already enqueued: `id` is the first job's and nothing was added.
    bool duplicate = false;
};

/// Sizes and counters of a queue (one snapshot).
struct QueueStats {
    std::uint64_t ready = 0;      ///< in the stream, not delivered yet
    std::uint64_t delayed = 0;    ///< waiting in the delayed set
    std::uint64_t in_flight = 0;  ///< delivered, not acknowledged
    std::uint64_t dead = 0;       ///< in the dead-letter stream
    /// Counters since the queue was created (HGETALL queue:{Q}:stats), by name: enqueued,
    /// duplicate_enqueues, completed, duplicates, contention_retries, business_retries,
    /// retry_later, infrastructure_retries, lease_lost, dead, retried_dead.
    std::vector<std::pair<std::string, std::uint64_t>> counters;

    /// A counter by name (0 when never incremented).
    std::uint64_t counter(std::string_view name) const noexcept;
};

/// A job in the dead-letter stream.
struct DeadJob {
    Job job;
    std::string reason;
    /// Redis TIME (Unix ms) when it was dead-lettered.
    std::int64_t failed_ms = 0;
};

/// Producer and operator side of a queue. Thread-safe (calls are serialized on one connection).
class JobQueue {
public:
    static std::expected<JobQueue, OptionError> create(QueueOptions options);
    JobQueue(JobQueue&&) noexcept;
    JobQueue& operator=(JobQueue&&) noexcept;
    ~JobQueue();

    /// Adds a job (or finds the job already enqueued with its idempotency key), atomically.
    /// Throws std::invalid_argument for a key outside 1..256 bytes or a negative delay.
    /// A resource name or key that is not store text (valid UTF-8 without NUL,
    /// fencelock/store_text.hpp) is refused with store_errc::invalid_input before anything is
    /// sent: the job's store could never hold it.
    Result<EnqueueResult> enqueue(const EnqueueRequest& request);
    Result<QueueStats> stats();
    /// Dead jobs, oldest first, at most `limit`.
    Result<std::vector<DeadJob>> dead(std::size_t limit);
    /// Puts dead jobs back (all, or those with job id `id`) with business attempts reset;
    /// returns how many.
    Result<std::size_t> retry_dead(const std::optional<std::string>& id);
    /// Moves due delayed jobs to the stream (workers do this themselves; for tools and tests).
    Result<std::size_t> promote_due(std::size_t limit);

    const QueueOptions& options() const noexcept;

private:
    struct Impl;
    explicit JobQueue(std::unique_ptr<Impl> impl) noexcept;
    std::unique_ptr<Impl> impl_;
};

struct WorkerOptions {
    /// Jobs processed concurrently (slots), each with its own Redis connection. Default 1.
    std::size_t concurrency = 1;
    /// Lease, retry policies and observer of the per-job protocol.
    ProcessorOptions processing{};
    /// An entry delivered this long ago whose worker stopped heart-beating is handed to
    /// another worker (XAUTOCLAIM). Must exceed 3 * heartbeat_every. Default 60 s.
    milliseconds visibility_timeout{60'000};
    /// How often in-flight entries are claimed again to keep their idle time low (0: a third of
    /// the visibility timeout). Default 0.
    milliseconds heartbeat_every{0};
    /// Longest blocking read (XREADGROUP BLOCK). Shorter when a delayed job falls due sooner.
    /// Default 1 s.
    milliseconds block{1000};
    /// Longest time between two promotions of due delayed jobs. Default 200 ms.
    milliseconds promote_every{200};
    /// After stop is requested, in-flight jobs may finish for this long; then their stop
    /// tokens are requested (the handler is cancelled, nothing commits) and the entries stay
    /// unacknowledged for redelivery. Default 30 s.
    milliseconds shutdown_grace{30'000};
    /// An entry delivered more often than this without any outcome (its workers keep
    /// crashing) is dead-lettered. Default 10.
    std::uint32_t max_deliveries = 10;
    /// Prefix of the consumer names in the group (one per slot). Default host-pid-random.
    std::string consumer_name{};

    std::expected<void, OptionError> validate() const;
};

/// Counters of one worker (this process), by outcome. The queue-wide counters are in
/// QueueStats.
struct WorkerStats {
    std::uint64_t delivered = 0;
    std::uint64_t reclaimed = 0;
    std::uint64_t completed = 0;
    std::uint64_t duplicates = 0;
    std::uint64_t contention_retries = 0;
    std::uint64_t business_retries = 0;
    std::uint64_t retry_later = 0;
    std::uint64_t infrastructure_retries = 0;
    /// Attempts aborted because the lease was lost (nothing committed).
    std::uint64_t lease_lost = 0;
    std::uint64_t dead = 0;
    /// Attempts cancelled by the shutdown deadline (left for redelivery).
    std::uint64_t cancelled = 0;
    /// Decisions the transport could not apply because another worker had reclaimed the entry.
    std::uint64_t superseded = 0;
    /// Redis calls of the transport that failed.
    std::uint64_t transport_errors = 0;
};

/// The runtime: N slots reading the queue's consumer group. Create it, then call run() or
/// run_external() from one thread; they return after a graceful shutdown.
class QueueWorker {
public:
    /// The client and store must outlive the worker.
    static std::expected<QueueWorker, OptionError> create(QueueOptions queue, WorkerOptions options,
                                                          LockClient& locks, FencedStore& store);
    QueueWorker(QueueWorker&&) noexcept;
    QueueWorker& operator=(QueueWorker&&) noexcept;
    ~QueueWorker();

    /// Processes jobs until `stop` is requested, then shuts down gracefully: no new jobs,
    /// in-flight jobs finish within shutdown_grace or are cancelled, leases are released,
    /// unacknowledged entries stay for redelivery. Returns this worker's counters.
    WorkerStats run(TransactionalHandler handler, std::stop_token stop);
    WorkerStats run_external(ExternalHandler handler, std::stop_token stop);

    /// Cancels in-flight jobs now (a second Ctrl-C), without waiting for shutdown_grace.
    void cancel_in_flight() noexcept;
    /// Live counters (thread-safe).
    WorkerStats stats() const;

private:
    struct Impl;
    explicit QueueWorker(std::unique_ptr<Impl> impl) noexcept;
    std::unique_ptr<Impl> impl_;
};

}  // namespace fencelock
