#include "faults/queue_job.hpp"

#include <optional>

#include "faults/store_target.hpp"
#include "faults/worker.hpp"

namespace fencelock::faults {
namespace {

using std::chrono::milliseconds;

// The job's effect: append its key to the record and log the write, in `tx`.
StoreResult<void> append_effect(Transaction& tx, const std::string& record, std::uint64_t fence,
                                const std::string& key) {
    auto base = read_value(tx, record);
    if (!base) return std::unexpected(base.error());
    const std::string value = appended(*base, key);
    if (auto w = write_value(tx, record, value); !w) return w;
    return log_accepted(tx, record, fence, value, key);
}

bool commit_unknown(const std::error_code& e) { return e == make_error_code(store_errc::commit_unknown); }

}  // namespace

void JobBook::opened(const std::string& job_id, std::uint64_t op) {
    std::lock_guard lock(m_);
    open_[job_id] = op;
}

void JobBook::settled(const Decision& d) {
    if (!d.acknowledges() && d.verdict != Verdict::dead) return;
    std::uint64_t op = 0;
    {
        std::lock_guard lock(m_);
        auto it = open_.find(d.job.id);
        if (it == open_.end()) return;
        op = it->second;
        open_.erase(it);
    }
    jobs_.complete(op, d.verdict == Verdict::dead ? Outcome::fail : Outcome::ok, 0, {},
                   std::string(to_string(d.verdict)));
}

std::size_t JobBook::open() const {
    std::lock_guard lock(m_);
    return open_.size();
}

WorkerStats JobRecorder::run(QueueWorker& worker, std::stop_token stop) {
    if (plan_.effect == Effect::autocommit)
        return worker.run_external([this](const JobContext& ctx) { return autocommit(ctx); }, stop);
    return worker.run([this](const JobContext& ctx, Transaction& tx) { return in_transaction(ctx, tx); }, stop);
}

void JobRecorder::on_acquired(const Job& job, FencingToken) noexcept {
    {
        std::lock_guard lock(m_);
        acquired_ns_[job.id] = now_ns();
    }
    at("acquired");
}

void JobRecorder::on_decision(const Decision& d) noexcept {
    std::optional<std::uint64_t> write;
    {
        std::lock_guard lock(m_);
        if (auto it = writes_.find(d.job.id); it != writes_.end()) {
            write = it->second;
            writes_.erase(it);
        }
        acquired_ns_.erase(d.job.id);
    }
    if (write) {
        const Outcome o = d.verdict == Verdict::completed ? Outcome::ok
                          : commit_unknown(d.error)       ? Outcome::unknown
                                                          : Outcome::fail;
        ops_.complete(*write, o, 0, {}, std::string(to_string(d.verdict)));
    }
    if (d.verdict == Verdict::completed) at("committed");
}

void JobRecorder::on_settled(const Decision& d, bool applied) noexcept {
    if (book_ != nullptr && applied) book_->settled(d);
}

// The hold ends at the handler's last validity check: up to there it may act on the lease.
void JobRecorder::held(const JobContext& ctx) {
    if (!ctx.lease.valid()) return;
    std::int64_t start = 0;
    {
        std::lock_guard lock(m_);
        start = acquired_ns_[ctx.job.id];
    }
    ops_.hold(record_of(ctx.job), ctx.fence.value(), start, now_ns());
}

std::expected<void, JobFailure> JobRecorder::in_transaction(const JobContext& ctx, Transaction& tx) {
    const std::string record = record_of(ctx.job);
    const std::string& key = ctx.job.idempotency_key;
    const auto op = ops_.invoke(OpKind::write, record, ctx.fence.value(), {}, key);
    std::optional<std::uint64_t> rolled_back;  // the store runs the mutation again after a conflict
    {
        std::lock_guard lock(m_);
        if (auto it = writes_.find(ctx.job.id); it != writes_.end()) rolled_back = it->second;
        writes_[ctx.job.id] = op;
    }
    if (rolled_back) ops_.complete(*rolled_back, Outcome::fail, 0, {}, "attempt rolled back");
    if (auto e = append_effect(tx, record, ctx.fence.value(), key); !e)
        return std::unexpected(JobFailure::business(e.error().detail));
    if (plan_.effect == Effect::forget_key) {
        auto d = tx.exec("DELETE FROM fencelock_idempotency WHERE key = $1", {key});
        if (!d) return std::unexpected(JobFailure::business(d.error().detail));
    }
    held(ctx);
    at("mutation");
    return {};
}

std::expected<void, JobFailure> JobRecorder::autocommit(const JobContext& ctx) {
    const std::string record = record_of(ctx.job);
    const std::string& key = ctx.job.idempotency_key;
    const auto op = ops_.invoke(OpKind::write, record, ctx.fence.value(), {}, key);
    auto r = store_.transact(ctx.job.resource, ctx.fence, {.owner = ctx.owner},
                             [&](Transaction& tx) { return append_effect(tx, record, ctx.fence.value(), key); });
    const bool committed = r && r->status == TransactStatus::committed;
    const Outcome o = committed ? Outcome::ok : !r && commit_unknown(r.error().code) ? Outcome::unknown : Outcome::fail;
    ops_.complete(op, o, 0, {}, r ? std::string(to_string(r->status)) : r.error().detail);
    if (!committed) return std::unexpected(JobFailure::retry_later("effect not applied"));
    held(ctx);
    at("mutation");
    return {};
}

WorkerOptions scenario_worker(milliseconds lease, milliseconds visibility, std::shared_ptr<QueueObserver> observer) {
    const RetryPolicy quick{.base = milliseconds(5), .cap = milliseconds(100), .jitter = milliseconds(10)};
    return WorkerOptions{.concurrency = 1,
                         .processing = {.lease = lease,
                                        .retry = {.contention = quick,
                                                  .business = quick,
                                                  .max_business_attempts = 5,
                                                  .infrastructure = quick},
                                        .observer = std::move(observer)},
                         .visibility_timeout = visibility,
                         .block = milliseconds(100),
                         .promote_every = milliseconds(20),
                         .shutdown_grace = milliseconds(5000)};
}

}  // namespace fencelock::faults
