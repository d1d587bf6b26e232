#pragma once
// One log line per lease per change of its renewal outcome. While Redis fails over, the keeper
// retries each kept lease's renewal about every 100 ms, and each failure used to log a warning:
// thousands of identical lines per second that hid the one that mattered. The limiter lets the
// first failure of a kind through, holds back repeats of the same kind (counting them), lets a
// different kind through, and lets the first success after failures through once, with the
// count. Metrics still count every renewal: only the log is limited. No I/O; thread-safe.
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace fencelock::detail {

class RenewalLogLimit {
public:
    struct Verdict {
        /// Write the line.
        bool log = true;
        /// Outcomes of the same kind as the last logged one that were held back since it.
        std::uint64_t held_back = 0;
        /// The first success after failures.
        bool recovered = false;
    };

    /// `max_failing`: leases tracked at once; beyond it every outcome is logged (the limiter
    /// never grows without bound, and never hides a lease it cannot track).
    explicit RenewalLogLimit(std::size_t max_failing = 10'000) : max_failing_(max_failing) {}

    /// A renewal of `lease` ended in `outcome` ("renewed", or a failure kind such as
    /// "error:redis:3" or "not_owner").
    Verdict note(const std::string& lease, std::string_view outcome) {
        std::lock_guard lock(mutex_);
        const auto it = failing_.find(lease);
        if (outcome == "renewed") {
            if (it == failing_.end()) return {};
            const Verdict v{.log = true, .held_back = it->second.held_back, .recovered = true};
            failing_.erase(it);
            return v;
        }
        if (it == failing_.end()) {
            if (failing_.size() < max_failing_) failing_.emplace(lease, Failing{std::string(outcome), 0});
            return {};
        }
        if (it->second.kind == outcome) {
            ++it->second.held_back;
            return {.log = false, .held_back = it->second.held_back};
        }
        const Verdict v{.log = true, .held_back = it->second.held_back};
        it->second = Failing{std::string(outcome), 0};
        return v;
    }

    /// The lease ended (released or lost): nothing more to hold back for it.
    void forget(const std::string& lease) {
        std::lock_guard lock(mutex_);
        failing_.erase(lease);
    }

    std::size_t failing() const {
        std::lock_guard lock(mutex_);
        return failing_.size();
    }

private:
    struct Failing {
        std::string kind;
        std::uint64_t held_back;
    };
    std::size_t max_failing_;
    mutable std::mutex mutex_;
    std::unordered_map<std::string, Failing> failing_;
};

}  // namespace fencelock::detail
