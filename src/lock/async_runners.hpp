#pragma once
// The runner threads behind AsyncLockClient: a FIFO of jobs and a fixed set of threads that
// carry them out. Knows nothing of locks, so the unit tier tests its shutdown rules alone.
//
// Shutdown is what needs care. close() marks the queue closed and joins the runners; each
// runner keeps taking jobs until it finds the queue closed and empty, handing a job taken
// after close() `closing = true` so that it completes its callback with an error instead of
// doing its work. A job posted by another job while closing lands in the queue and is drained
// the same way (the runner that ran the poster is still looping), so every job runs exactly
// once. A post from a thread that is not a runner, once the queue is closed, runs the job at
// once on the posting thread with `closing = true`: nothing would take it from the queue.
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace fencelock::detail {

class AsyncRunners {
public:
    /// A unit of work; `closing` is true when it was taken after close() began.
    using Job = std::move_only_function<void(bool closing)>;

    explicit AsyncRunners(std::size_t threads);
    /// close(), if not yet done.
    ~AsyncRunners();
    AsyncRunners(const AsyncRunners&) = delete;
    AsyncRunners& operator=(const AsyncRunners&) = delete;

    /// Queues `job`; a runner calls it without holding the queue's lock.
    void post(Job job);

    /// True once close() began: a job that finishes its work afterwards reports it cancelled.
    bool closing() const;

    /// Hands every queued job `closing = true`, waits for the jobs under way and joins the
    /// runners. Must not be called from a job.
    void close();

private:
    void run();

    mutable std::mutex mutex_;
    std::condition_variable ready_;
    std::deque<Job> jobs_;
    bool closing_ = false;
    std::vector<std::thread> threads_;
};

}  // namespace fencelock::detail
