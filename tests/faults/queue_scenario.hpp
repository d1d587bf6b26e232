#pragma once
// Ground of the queue scenarios: a ScenarioTest on a store backend plus a JobQueue on the
// test's redis-server, job ops opened at enqueue (JobBook), and queue workers on threads of the
// test that record through JobRecorder and settle those ops.
#include <memory>
#include <stop_token>
#include <thread>

#include "faults/queue_job.hpp"
#include "faults/scenario.hpp"
#include "fencelock/queue.hpp"

namespace fencelock::faults {

/// A QueueWorker with its own lock client on a thread of the test; stopped (gracefully) by
/// stop() or on destruction.
class WorkerThread {
public:
    WorkerThread(LockClient locks, FencedStore& store, const QueueOptions& queue, const WorkerOptions& options,
                 std::shared_ptr<JobRecorder> recorder);
    ~WorkerThread() { stop(); }
    WorkerThread(const WorkerThread&) = delete;
    WorkerThread& operator=(const WorkerThread&) = delete;
    /// Stops and returns the worker's counters.
    WorkerStats stop();

private:
    LockClient locks_;
    std::unique_ptr<QueueWorker> worker_;
    std::shared_ptr<JobRecorder> recorder_;
    WorkerStats stats_;
    std::jthread thread_;
};

class QueueScenario : public ScenarioTest {
protected:
    void SetUp() override;
    void TearDown() override;

    FencedStore& store();
    QueueOptions queue_options() const;
    /// Opens a job op and enqueues the job; returns the job id.
    std::string enqueue(const std::string& resource, const std::string& key);
    /// A worker on a thread whose ops go to `name`'s history file.
    std::unique_ptr<WorkerThread> start_worker(const std::string& name, JobPlan plan, const WorkerOptions& options);
    QueueStats stats();

    std::unique_ptr<JobQueue> queue;
    std::unique_ptr<Recorder> jobs;
    std::unique_ptr<JobBook> book;
    /// Recorders of the workers started, kept until the test ends.
    std::vector<std::unique_ptr<Recorder>> worker_recorders;
};

}  // namespace fencelock::faults
