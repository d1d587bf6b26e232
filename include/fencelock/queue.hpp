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
#include <span>
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

// The operator's view of a queue's jobs (JobQueue::list, find, retry, discard, purge; see
// docs/QUEUE.md, "Inspecting and repairing a queue"). A job is in exactly one state at a time:
//   ready    in the stream, not delivered to any worker yet (or given back for redelivery)
//   running  delivered to a worker's slot and not yet acknowledged (the group's pending list)
//   delayed  in the delayed set until its due time (a --delay, or a retry's backoff)
//   dead     in the dead-letter stream, with the reason it failed
enum class JobState { ready, running, delayed, dead };

/// "ready", "running", "delayed", "dead".
std::string_view to_string(JobState state) noexcept;
/// The state a name spells (as to_string writes it); nullopt for any other text.
std::optional<JobState> job_state_from_name(std::string_view name) noexcept;

/// A job as an operator sees it: the job and where it is.
struct QueuedJob {
    Job job;
    JobState state = JobState::ready;
    /// The stream entry holding it (ready, running: the queue's stream; dead: the dead-letter
    /// stream). Empty for a delayed job.
    std::string entry_id{};
    /// delayed: when it falls due, Unix ms of Redis's clock. 0 otherwise.
    std::int64_t due_ms = 0;
    /// running: the worker slot (consumer) holding it, how long since that slot last claimed
    /// or heart-beat it, and how often this entry was delivered. Empty / 0 otherwise.
    std::string consumer{};
    std::int64_t idle_ms = 0;
    std::uint32_t delivery_count = 0;
    /// dead: why, and when (Unix ms of Redis's clock). Empty / 0 otherwise.
    std::string reason{};
    std::int64_t failed_ms = 0;
};

/// Which page of which state JobQueue::list returns.
struct ListRequest {
    /// Required: no default.
    JobState state = JobState::ready;
    /// Jobs per page, 1..max_page_size. Default 100.
    std::size_t limit = 100;
    /// "" for the first page, else JobPage::next_cursor of the page before. Default "".
    std::string after{};
};

/// The largest page list() returns (one script reads a page; bounded work per call).
inline constexpr std::size_t max_page_size = 1000;

/// Whether `cursor` can be a next_cursor of a page of `state` ("" always can).
bool valid_cursor(JobState state, std::string_view cursor) noexcept;

/// One page, oldest first (ready, running, dead: by entry id; delayed: by due time). Pages are
/// read one script call each: a job that changes state between two calls can be missed or seen
/// twice, never half-written.
struct JobPage {
    std::vector<QueuedJob> jobs;
    /// The cursor of the next page; nullopt when this page is the last.
    std::optional<std::string> next_cursor;
};

/// What retry(id) or discard(id) did.
enum class DeadJobChange {
    done,       ///< the job was dead and is retried / discarded
    not_found,  ///< no job of the queue has that id (nothing changed)
    not_dead,   ///< the job exists but is ready, running or delayed (nothing changed)
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
    /// returns how many. Throws std::invalid_argument for an empty `id` (nullopt means all).
    Result<std::size_t> retry_dead(const std::optional<std::string>& id);
    /// Moves due delayed jobs to the stream (workers do this themselves; for tools and tests).
    Result<std::size_t> promote_due(std::size_t limit);

    /// Adds many jobs in one pipelined round trip, each as enqueue() would (its own
    /// deduplication; results in the order of `requests`). Every request is checked before
    /// anything is sent: one invalid request throws or returns store_errc::invalid_input as
    /// enqueue() would, and no job is added. A transport failure fails the whole batch (jobs
    /// before the failure may have been added: send them again, their keys make that safe).
    Result<std::vector<EnqueueResult>> enqueue_batch(std::span<const EnqueueRequest> requests);

    /// One page of the jobs in `request.state` (JobState above). Throws std::invalid_argument
    /// for a limit outside 1..max_page_size or a cursor that valid_cursor refuses.
    Result<JobPage> list(const ListRequest& request);
    /// The job with this id, in whatever state; nullopt when the queue has none. Reads the
    /// whole queue in one script: O(jobs), for operators.
    Result<std::optional<QueuedJob>> find(std::string_view id);
    /// Puts the dead job `id` back on the stream with its business attempts reset. Throws
    /// std::invalid_argument for an empty id.
    Result<DeadJobChange> retry(std::string_view id);
    /// Deletes the dead job `id` and forgets its idempotency key (the key can be enqueued
    /// again). Throws std::invalid_argument for an empty id.
    Result<DeadJobChange> discard(std::string_view id);
    /// Deletes every job in `state` (ready, delayed or dead; throws std::invalid_argument for
    /// running: those are being worked on) and forgets their idempotency keys; returns how
    /// many. Works in chunks of one script call each: jobs arriving meanwhile may be deleted too.
    Result<std::size_t> purge(JobState state);

    const QueueOptions& options() const noexcept;

private:
    /// Why retry/discard changed nothing.
    Result<DeadJobChange> not_dead_or_missing(std::string_view id);

    struct Impl;
    explicit JobQueue(std::unique_ptr<Impl> impl) noexcept;
    std::unique_ptr<Impl> impl_;
};

/// Enqueues one job with no JobQueue kept: connects, enqueues, disconnects (JobQueue::create
/// and enqueue). For a producer that enqueues now and then; keep a JobQueue for many jobs.
/// Throws what enqueue throws; invalid `options` come back as OptionError's message in
/// std::invalid_argument.
Result<EnqueueResult> enqueue(const QueueOptions& options, const EnqueueRequest& request);

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
    static std::expected<QueueWorker, OptionError> create(QueueOptions queue, WorkerOptions options, LockClient& locks,
                                                          FencedStore& store);
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
