#pragma once
// Queue tests run against a throwaway redis-server and a fresh database of each backend
// (tests/store's TestDatabase: a new SQLite file, or a new database on the shared PostgreSQL).
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "fencelock/queue.hpp"
#include "local_servers/redis_server.hpp"
#include "store_fixture.hpp"
#include "support/eventually.hpp"

namespace fencelock::test_support {

/// The application table every test handler writes its effect to: one row per execution
/// that committed. job_effects(job_id TEXT, fence BIGINT, note TEXT).
inline constexpr const char* job_effects_table = "CREATE TABLE job_effects (job_id TEXT, fence BIGINT, note TEXT)";

/// Small delays so the tests run in seconds, not minutes.
RetryPolicies fast_policies();

/// Counters and worker stats, for failure messages.
std::string describe(const QueueStats& s);
std::string describe(const WorkerStats& s);

/// A handler that inserts the job's effect row.
std::expected<void, JobFailure> insert_effect(const JobContext& ctx, Transaction& tx, const std::string& note = "");

class QueueTest : public ::testing::TestWithParam<Backend> {
protected:
    void SetUp() override;
    void TearDown() override;

    LockClient client(std::shared_ptr<LockObserver> observer = nullptr) const;
    QueueOptions queue_options() const { return QueueOptions{.queue = queue_name, .endpoint = endpoint()}; }
    RedisEndpoint endpoint() const;
    EnqueueResult enqueue(const std::string& resource, const std::string& key, const std::string& payload = "{}");
    QueueStats stats();
    /// Rows of job_effects for a job id.
    int effects(const std::string& job_id) const;
    int total_effects() const;

    std::unique_ptr<local::RedisServer> redis;
    std::unique_ptr<TestDatabase> db;
    std::unique_ptr<FencedStore> store;
    std::unique_ptr<JobQueue> queue;
    std::string queue_name = "jobs";
    std::filesystem::path dir;  ///< scratch directory for marker files
};

/// A worker running on a thread of the test until stopped (or destroyed).
class BackgroundWorker {
public:
    BackgroundWorker(QueueWorker worker, TransactionalHandler handler);
    ~BackgroundWorker();
    /// Requests the graceful shutdown and waits for it; returns the worker's counters.
    WorkerStats stop();
    QueueWorker& worker() { return *worker_; }

private:
    std::unique_ptr<QueueWorker> worker_;
    std::stop_source stop_;
    std::optional<WorkerStats> result_;
    std::thread thread_;
};

}  // namespace fencelock::test_support
