#pragma once
// Readiness from the Redis round trips a process reports (docs/RUNBOOK.md, "Health and
// readiness"): the last one decides. A failure makes the process not ready and says which
// side saw it and why; the next round trip Redis answered makes it ready again. Before any
// round trip the process is ready: nothing has failed, and an idle worker whose Redis is up
// reports nothing until a job arrives. Thread-safe; a success while ready costs one atomic load.
#include <atomic>
#include <mutex>
#include <string>
#include <string_view>
#include <system_error>

#include "fencelock/metrics.hpp"

namespace fencelock::detail {

class RedisHealth {
public:
    /// A Redis call of `source` ("client", "keeper", "worker") failed with `error` (may be
    /// empty when the caller does not know it).
    void failed(std::string_view source, std::error_code error) noexcept {
        try {
            std::string reason = "redis unavailable (" + std::string(source) + ")";
            if (error) reason += ": " + error.message();
            std::lock_guard lock(mutex_);
            reason_ = std::move(reason);
            ready_.store(false, std::memory_order_release);
        } catch (...) {
        }
    }

    /// A Redis call succeeded (whatever Redis answered: a contended lock is an answer).
    void answered() noexcept {
        if (ready_.load(std::memory_order_acquire)) return;
        std::lock_guard lock(mutex_);
        reason_.clear();
        ready_.store(true, std::memory_order_release);
    }

    Readiness state() const {
        std::lock_guard lock(mutex_);
        return Readiness{.ready = ready_.load(std::memory_order_acquire), .reason = reason_};
    }

private:
    std::atomic<bool> ready_{true};
    mutable std::mutex mutex_;
    std::string reason_;
};

}  // namespace fencelock::detail
