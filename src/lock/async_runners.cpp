#include "lock/async_runners.hpp"

namespace fencelock::detail {
namespace {
// The queue whose runner this thread is, if any: a runner's posts always reach the queue.
thread_local const AsyncRunners* current_runners = nullptr;
}  // namespace

AsyncRunners::AsyncRunners(std::size_t threads) {
    threads_.reserve(threads);
    try {
        for (std::size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { run(); });
    } catch (...) {
        close();
        throw;
    }
}

AsyncRunners::~AsyncRunners() { close(); }

void AsyncRunners::post(Job job) {
    {
        std::lock_guard lock(mutex_);
        if (!closing_ || current_runners == this) {
            jobs_.push_back(std::move(job));
            ready_.notify_one();
            return;
        }
    }
    job(true);  // closed, and no runner may be left to take it
}

bool AsyncRunners::closing() const {
    std::lock_guard lock(mutex_);
    return closing_;
}

void AsyncRunners::close() {
    {
        std::lock_guard lock(mutex_);
        closing_ = true;
    }
    ready_.notify_all();
    for (auto& t : threads_)
        if (t.joinable()) t.join();
}

void AsyncRunners::run() {
    current_runners = this;
    for (;;) {
        Job job;
        bool closing = false;
        {
            std::unique_lock lock(mutex_);
            ready_.wait(lock, [&] { return closing_ || !jobs_.empty(); });
            if (jobs_.empty()) return;  // closing, and nothing left to drain
            job = std::move(jobs_.front());
            jobs_.pop_front();
            closing = closing_;
        }
        job(closing);
    }
}

}  // namespace fencelock::detail
