// QueueWorker: N slots over the Redis Streams transport, a heartbeat, graceful shutdown.
//
// Each slot owns a connection (its blocking read must not hold up anyone else; the connection's
// command timeout is the block time plus the command timeout) and loops:
//   1. if the shared reclaim schedule is due: XAUTOCLAIM one entry idle longer than the
//      visibility timeout (its worker crashed or stalled) and process it;
//   2. if the shared promote schedule is due: move due delayed jobs to the stream;
//   3. XREADGROUP one entry, blocking at most until the next scheduled promotion;
//   4. hand the job to the JobProcessor and act on its decision: acknowledge, requeue with a
//      delay, dead-letter, or (cancelled) leave the entry pending for redelivery.
// Nothing sleeps out a job's delay: a requeued job sits in the delayed set, and the slot that
// requeued it pulls the promote schedule forward to its due time.
//
// Acknowledge only after the effect committed: completion is acknowledged after the store
// committed (or reported the key as a duplicate). A crash in between leaves the entry pending;
// it is reclaimed after the visibility timeout and the store answers duplicate. The heartbeat
// thread keeps in-flight entries' idle time low (XCLAIM ... JUSTID, only while still ours), so a
// long job is not reclaimed while its worker is alive.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <variant>

#include "fencelock/queue.hpp"
#include "queue/decide.hpp"
#include "queue/streams_transport.hpp"
#include "redis/cluster_connection.hpp"
#include "redis/hiredis_connection.hpp"

namespace fencelock {
namespace {

using steady = std::chrono::steady_clock;
using AnyHandler = std::variant<TransactionalHandler, ExternalHandler>;

std::int64_t now_ns() { return steady::now().time_since_epoch().count(); }
std::int64_t to_ns(milliseconds d) { return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count(); }

/// Lowers `target` to `value` if `value` is earlier.
void pull_forward(std::atomic<std::int64_t>& target, std::int64_t value) {
    std::int64_t cur = target.load();
    while (value < cur && !target.compare_exchange_weak(cur, value)) {
    }
}

/// Claims a due schedule for this caller: true (and the schedule moved to now + every) when due.
bool claim_due(std::atomic<std::int64_t>& schedule, milliseconds every) {
    const std::int64_t now = now_ns();
    std::int64_t cur = schedule.load();
    while (cur <= now) {
        if (schedule.compare_exchange_weak(cur, now + to_ns(every))) return true;
    }
    return false;
}

/// Sleeps `d` unless `stop` is requested first; returns false when stopped.
bool sleep_for(milliseconds d, std::stop_token stop) {
    std::mutex m;
    std::condition_variable_any cv;
    std::unique_lock lock(m);
    cv.wait_for(lock, stop, d, [] { return false; });
    return !stop.stop_requested();
}

std::string default_consumer_prefix() {
    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') std::snprintf(host, sizeof host, "host");
    std::string h(host);
    std::replace_if(
        h.begin(), h.end(), [](char c) { return c <= ' ' || c > '~'; }, '_');
    return h + "-" + std::to_string(::getpid()) + "-" + detail::new_job_id().substr(0, 6);
}

std::string_view counter_for(Verdict v) {
    switch (v) {
        case Verdict::completed: return "completed";
        case Verdict::duplicate: return "duplicates";
        case Verdict::requeue_contended: return "contention_retries";
        case Verdict::retry_business: return "business_retries";
        case Verdict::retry_later: return "retry_later";
        case Verdict::retry_infrastructure: return "infrastructure_retries";
        case Verdict::lease_lost: return "lease_lost";
        case Verdict::dead: return "dead";
        case Verdict::cancelled: return "cancelled";
    }
    return "unknown";
}

struct Counters {
    std::atomic<std::uint64_t> delivered{0}, reclaimed{0}, completed{0}, duplicates{0}, contention_retries{0},
        business_retries{0}, retry_later{0}, infrastructure_retries{0}, lease_lost{0}, dead{0}, cancelled{0},
        superseded{0}, transport_errors{0};

    void count(Verdict v) {
        switch (v) {
            case Verdict::completed: ++completed; break;
            case Verdict::duplicate: ++duplicates; break;
            case Verdict::requeue_contended: ++contention_retries; break;
            case Verdict::retry_business: ++business_retries; break;
            case Verdict::retry_later: ++retry_later; break;
            case Verdict::retry_infrastructure: ++infrastructure_retries; break;
            case Verdict::lease_lost: ++lease_lost; break;
            case Verdict::dead: ++dead; break;
            case Verdict::cancelled: ++cancelled; break;
        }
    }
    WorkerStats snapshot() const {
        return {delivered,          reclaimed,
                completed,          duplicates,
                contention_retries, business_retries,
                retry_later,        infrastructure_retries,
                lease_lost,         dead,
                cancelled,          superseded,
                transport_errors};
    }
};

}  // namespace

struct QueueWorker::Impl {
    Impl(QueueOptions q, WorkerOptions o, JobProcessor p)
        : queue(std::move(q)),
          options(std::move(o)),
          processor(std::move(p)),
          transport(detail::queue_keys(queue.key_prefix, queue.queue), queue.queue) {
        consumer_prefix = options.consumer_name.empty() ? default_consumer_prefix() : options.consumer_name;
        heartbeat_every = options.heartbeat_every > milliseconds::zero() ? options.heartbeat_every
                                                                         : options.visibility_timeout / 3;
        reclaim_every = std::clamp(options.visibility_timeout / 4, milliseconds(10), milliseconds(5000));
    }

    QueueOptions queue;
    WorkerOptions options;
    JobProcessor processor;
    detail::StreamsTransport transport;
    std::string consumer_prefix;
    milliseconds heartbeat_every{}, reclaim_every{};
    Counters counters;

    std::mutex cancel_mutex;
    std::stop_source cancel;

    std::mutex in_flight_mutex;
    std::map<std::string, std::string> in_flight;  // consumer -> entry id

    std::atomic<std::int64_t> next_promote{0}, next_reclaim{0};
    std::mutex cursor_mutex;
    std::string reclaim_cursor = "0-0";

    std::unique_ptr<detail::Connection> connect(milliseconds extra = milliseconds(0)) const {
        return detail::make_endpoint_connection(
            detail::ConnectionSettings{queue.endpoint, queue.connect_timeout, queue.command_timeout + extra},
            detail::make_hiredis_connection);
    }
    void transport_error(std::error_code ec) {
        ++counters.transport_errors;
        if (options.processing.observer) options.processing.observer->on_transport_error(ec);
    }

    WorkerStats run(AnyHandler handler, std::stop_token stop);
    void slot_loop(std::size_t index, const AnyHandler& handler, std::stop_token intake, std::stop_token cancel);
    /// Steps 1-3 of the loop: a reclaimed or newly read entry, or nothing.
    Result<std::optional<std::pair<detail::Entry, bool>>> next_entry(detail::Connection& c,
                                                                     const std::string& consumer);
    /// Step 4. Returns false when acting on the decision failed at the transport.
    bool handle(detail::Connection& c, const std::string& consumer, detail::Entry entry, bool reclaimed,
                const AnyHandler& handler, std::stop_token cancel, bool& infrastructure);
    bool settle(detail::Connection& c, const std::string& consumer, const std::string& entry_id, const Decision& d,
                const std::vector<std::string>* raw);
    void heartbeat_loop(std::stop_token stop);
};

Result<std::optional<std::pair<detail::Entry, bool>>> QueueWorker::Impl::next_entry(detail::Connection& c,
                                                                                    const std::string& consumer) {
    using Out = std::optional<std::pair<detail::Entry, bool>>;
    if (claim_due(next_reclaim, reclaim_every)) {
        std::string cursor;
        {
            std::lock_guard lock(cursor_mutex);
            cursor = reclaim_cursor;
        }
        auto r = transport.reclaim(c, consumer, options.visibility_timeout, cursor);
        if (!r) return std::unexpected(r.error());
        {
            std::lock_guard lock(cursor_mutex);
            reclaim_cursor = r->cursor;
        }
        // More may be waiting: look again at once rather than after reclaim_every.
        if (r->entry || r->cursor != "0-0") pull_forward(next_reclaim, now_ns());
        if (r->entry) return Out(std::pair(std::move(*r->entry), true));
    }
    if (claim_due(next_promote, options.promote_every)) {
        constexpr std::size_t batch = 100;
        auto p = transport.promote(c, batch);
        if (!p) return std::unexpected(p.error());
        if (p->moved == batch) pull_forward(next_promote, now_ns());
        else if (p->next_due) pull_forward(next_promote, now_ns() + to_ns(*p->next_due));
    }
    const std::int64_t wake = std::min(next_promote.load(), next_reclaim.load());
    const auto until_wake = std::chrono::duration_cast<milliseconds>(std::chrono::nanoseconds(wake - now_ns()));
    const milliseconds block = std::clamp(until_wake, milliseconds(1), options.block);
    auto r = transport.read(c, consumer, block);
    if (!r) return std::unexpected(r.error());
    if (!*r) return Out{};
    return Out(std::pair(std::move(**r), false));
}

bool QueueWorker::Impl::settle(detail::Connection& c, const std::string& consumer, const std::string& entry_id,
                               const Decision& d, const std::vector<std::string>* raw) {
    Result<bool> applied = true;
    if (d.acknowledges()) {
        applied = transport.complete(c, consumer, entry_id, counter_for(d.verdict));
    } else if (d.requeues()) {
        applied = transport.requeue(c, consumer, entry_id, d.job, d.delay, counter_for(d.verdict));
        if (applied && *applied) pull_forward(next_promote, now_ns() + to_ns(d.delay));
    } else if (d.verdict == Verdict::dead) {
        applied = transport.dead(c, consumer, entry_id, d.reason, raw ? *raw : detail::encode_job(d.job));
    }
    if (!applied) {
        // The entry stays pending and is redelivered after the visibility timeout; whatever
        // committed is protected by the idempotency key.
        transport_error(applied.error());
        return false;
    }
    if (!*applied) ++counters.superseded;
    if (options.processing.observer) options.processing.observer->on_settled(d, *applied);
    return true;
}

bool QueueWorker::Impl::handle(detail::Connection& c, const std::string& consumer, detail::Entry entry, bool reclaimed,
                               const AnyHandler& handler, std::stop_token cancel, bool& infrastructure) {
    ++counters.delivered;
    if (reclaimed) ++counters.reclaimed;
    auto job = detail::decode_job(queue.queue, entry.fields, entry.delivery_count);
    if (!job) {
        const auto raw = detail::raw_fields(entry.fields);
        Decision d{.verdict = Verdict::dead,
                   .cause = DecisionCause::malformed_entry,
                   .job = Job{.id = "",
                              .queue = queue.queue,
                              .resource = ResourceName::make("?").value(),
                              .idempotency_key = "",
                              .payload = "",
                              .contention_attempts = 0,
                              .business_attempts = 0,
                              .infrastructure_attempts = 0,
                              .deliveries = 0,
                              .last_error = job.error()},
                   .delay = milliseconds(0),
                   .reason = "malformed entry: " + job.error(),
                   .fence = std::nullopt,
                   .error = {}};
        counters.count(d.verdict);
        return settle(c, consumer, entry.entry_id, d, &raw);
    }
    if (options.processing.observer) options.processing.observer->on_delivered(*job, reclaimed);
    if (entry.delivery_count > options.max_deliveries) {
        Decision d = detail::decide_too_many_deliveries(*job, options.max_deliveries);
        counters.count(d.verdict);
        if (options.processing.observer) options.processing.observer->on_decision(d);
        return settle(c, consumer, entry.entry_id, d, nullptr);
    }
    {
        std::lock_guard lock(in_flight_mutex);
        in_flight[consumer] = entry.entry_id;
    }
    Decision d = std::holds_alternative<TransactionalHandler>(handler)
                     ? processor.process(*job, std::get<TransactionalHandler>(handler), cancel)
                     : processor.process_external(*job, std::get<ExternalHandler>(handler), cancel);
    counters.count(d.verdict);
    infrastructure = d.verdict == Verdict::retry_infrastructure;
    if (options.processing.observer) options.processing.observer->on_decision(d);
    const bool ok = settle(c, consumer, entry.entry_id, d, nullptr);
    {
        std::lock_guard lock(in_flight_mutex);
        in_flight.erase(consumer);
    }
    return ok;
}

void QueueWorker::Impl::slot_loop(std::size_t index, const AnyHandler& handler, std::stop_token intake,
                                  std::stop_token cancel) {
    const std::string consumer = consumer_prefix + "-" + std::to_string(index);
    auto c = connect(options.block);
    std::mt19937_64 rng{std::random_device{}()};
    std::uint32_t failures = 0;
    bool grouped = false;
    while (!intake.stop_requested()) {
        if (failures > 0) {
            // Back off (Redis or the database is failing); no job is taken meanwhile.
            if (!sleep_for(retry_delay(options.processing.retry.infrastructure, failures - 1, rng), intake)) break;
        }
        if (!grouped) {
            if (auto g = transport.ensure_group(*c); !g) {
                transport_error(g.error());
                ++failures;
                continue;
            }
            grouped = true;
        }
        auto next = next_entry(*c, consumer);
        if (!next) {
            transport_error(next.error());
            ++failures;
            continue;
        }
        if (!*next) {
            failures = 0;
            continue;
        }
        auto& [entry, reclaimed] = **next;
        if (intake.stop_requested()) {
            // Read as the shutdown began: give it straight back rather than let it wait out the
            // visibility timeout.
            auto job = detail::decode_job(queue.queue, entry.fields, 0);
            if (job) (void)transport.requeue(*c, consumer, entry.entry_id, *job, milliseconds(0), "returned");
            break;
        }
        bool infrastructure = false;
        const bool settled = handle(*c, consumer, std::move(entry), reclaimed, handler, cancel, infrastructure);
        failures = settled && !infrastructure ? 0 : failures + 1;
    }
    (void)transport.leave(*c, consumer);  // best effort: kept when entries are still pending
}

void QueueWorker::Impl::heartbeat_loop(std::stop_token stop) {
    auto c = connect();
    while (sleep_for(heartbeat_every, stop)) {
        std::vector<std::pair<std::string, std::string>> entries;
        {
            std::lock_guard lock(in_flight_mutex);
            entries.assign(in_flight.begin(), in_flight.end());
        }
        if (entries.empty()) continue;
        auto lost = transport.heartbeat(*c, entries);
        if (!lost) transport_error(lost.error());
    }
}

WorkerStats QueueWorker::Impl::run(AnyHandler handler, std::stop_token stop) {
    std::stop_token cancel_token;
    {
        std::lock_guard lock(cancel_mutex);
        cancel = std::stop_source{};
        cancel_token = cancel.get_token();
    }
    std::stop_source intake;
    std::stop_callback forward(stop, [&intake] { intake.request_stop(); });
    std::stop_source heartbeat_stop;
    std::thread heartbeat([this, t = heartbeat_stop.get_token()] { heartbeat_loop(t); });

    std::mutex m;
    std::condition_variable_any done;
    std::size_t running = options.concurrency;
    std::vector<std::thread> slots;
    for (std::size_t i = 0; i < options.concurrency; ++i) {
        slots.emplace_back([&, i] {
            slot_loop(i, handler, intake.get_token(), cancel_token);
            std::lock_guard lock(m);
            --running;
            done.notify_all();
        });
    }
    {
        std::unique_lock lock(m);
        done.wait(lock, intake.get_token(), [&] { return running == 0; });
        // Shutdown: slots finish their current job; after the grace period it is cancelled.
        if (!done.wait_for(lock, options.shutdown_grace, [&] { return running == 0; })) {
            std::lock_guard c(cancel_mutex);
            cancel.request_stop();
        }
        done.wait(lock, [&] { return running == 0; });
    }
    for (auto& t : slots) t.join();
    heartbeat_stop.request_stop();
    heartbeat.join();
    return counters.snapshot();
}

std::expected<QueueWorker, OptionError> QueueWorker::create(QueueOptions queue, WorkerOptions options,
                                                            LockClient& locks, FencedStore& store) {
    if (auto ok = queue.validate(); !ok) return std::unexpected(ok.error());
    if (auto ok = options.validate(); !ok) return std::unexpected(ok.error());
    auto processor = JobProcessor::create(locks, store, options.processing);
    if (!processor) return std::unexpected(processor.error());
    return QueueWorker(std::make_unique<Impl>(std::move(queue), std::move(options), std::move(*processor)));
}

QueueWorker::QueueWorker(std::unique_ptr<Impl> impl) noexcept : impl_(std::move(impl)) {}
QueueWorker::QueueWorker(QueueWorker&&) noexcept = default;
QueueWorker& QueueWorker::operator=(QueueWorker&&) noexcept = default;
QueueWorker::~QueueWorker() = default;

WorkerStats QueueWorker::run(TransactionalHandler handler, std::stop_token stop) {
    return impl_->run(AnyHandler(std::in_place_type<TransactionalHandler>, std::move(handler)), stop);
}

WorkerStats QueueWorker::run_external(ExternalHandler handler, std::stop_token stop) {
    return impl_->run(AnyHandler(std::in_place_type<ExternalHandler>, std::move(handler)), stop);
}

void QueueWorker::cancel_in_flight() noexcept {
    std::lock_guard lock(impl_->cancel_mutex);
    impl_->cancel.request_stop();
}

WorkerStats QueueWorker::stats() const { return impl_->counters.snapshot(); }

}  // namespace fencelock
