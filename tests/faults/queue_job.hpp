#pragma once
// The queue scenarios' job, recorded for the history checker.
//
// A job appends its idempotency key to a record (read, append, write back: the append-list
// workload of worker.hpp) and logs the write in `fault_accepted` (store_target.hpp), inside the
// job's fenced transaction unless the plan is a negative control. JobRecorder records, per
// execution, a `write` op (invoked in the handler, ended by the queue's decision: ok when it
// committed, unknown when the commit's reply was lost, fail otherwise) and a `hold` from the
// lease grant to the handler's last validity check. Job ops (enqueue to acknowledgement or
// dead letter) are opened by the test in a JobBook and closed by in-process workers.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <string_view>

#include "faults/fault_history.hpp"
#include "fencelock/queue.hpp"
#include "fencelock/store.hpp"

namespace fencelock::faults {

enum class Effect {
    /// Protected: effect, log row and completion key commit together in the job's transaction.
    in_transaction,
    /// Negative control: the same, but the handler deletes its completion key, so a job
    /// redelivered after the commit runs again.
    forget_key,
    /// Negative control: the effect commits on its own (an external handler) before the
    /// queue records the completion, so a crash in between makes it run again.
    autocommit,
};

struct JobPlan {
    /// Resource whose value the jobs append to; empty: each job's own resource.
    std::string record{};
    Effect effect = Effect::in_transaction;
    /// Called at "acquired" (lease granted), "mutation" (effect done, not committed) and
    /// "committed" (before the acknowledgement). A worker process stops there to be killed.
    std::function<void(std::string_view point)> at{};
};

/// Job ops the test opened at enqueue, each closed once by whichever in-process worker
/// settles the job. Open every job before a worker can take it. Thread-safe.
class JobBook {
public:
    explicit JobBook(Recorder& jobs) : jobs_(jobs) {}
    void opened(const std::string& job_id, std::uint64_t op);
    /// Closes the job's op if `d` ends the job (acknowledged or dead-lettered).
    void settled(const Decision& d);
    /// Jobs not settled yet.
    std::size_t open() const;

private:
    Recorder& jobs_;
    mutable std::mutex m_;
    std::map<std::string, std::uint64_t> open_;
};

class JobRecorder final : public QueueObserver {
public:
    /// `book` may be null (a worker process: its jobs are settled by the test's workers).
    JobRecorder(Recorder& ops, FencedStore& store, JobPlan plan, JobBook* book = nullptr)
        : ops_(ops), store_(store), plan_(std::move(plan)), book_(book) {}

    /// Runs `worker` with the plan's handler until `stop`.
    WorkerStats run(QueueWorker& worker, std::stop_token stop);

    void on_acquired(const Job& job, FencingToken fence) noexcept override;
    void on_decision(const Decision& d) noexcept override;
    void on_settled(const Decision& d, bool applied) noexcept override;

private:
    std::expected<void, JobFailure> in_transaction(const JobContext& ctx, Transaction& tx);
    std::expected<void, JobFailure> autocommit(const JobContext& ctx);
    std::string record_of(const Job& job) const { return plan_.record.empty() ? job.resource.str() : plan_.record; }
    void held(const JobContext& ctx);
    void at(std::string_view point) {
        if (plan_.at) plan_.at(point);
    }

    Recorder& ops_;
    FencedStore& store_;
    JobPlan plan_;
    JobBook* book_;
    std::mutex m_;
    std::map<std::string, std::int64_t> acquired_ns_;  // by job id
    std::map<std::string, std::uint64_t> writes_;      // open write op by job id
};

/// Worker options for the scenarios: one slot, short retry delays, `lease`, `visibility`
/// before a silent worker's entry is reclaimed.
WorkerOptions scenario_worker(std::chrono::milliseconds lease, std::chrono::milliseconds visibility,
                              std::shared_ptr<QueueObserver> observer);

}  // namespace fencelock::faults
