#include "demo/failover_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string>

namespace fencelock::demo {
namespace {

std::chrono::milliseconds since(std::int64_t from_ns, std::int64_t to_ns) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::nanoseconds(to_ns - from_ns));
}

// An accepted write is stale when a lease acquired after its own had a write acknowledged
// before it was even sent: judged by acquisition order, not by fences, because the fences are
// what the failover may have broken.
std::uint64_t count_stale_accepted(const History& history) {
    std::uint64_t stale = 0;
    for (const auto& older : history.operations) {
        if (older.result != "applied") continue;
        const bool overtaken =
            std::any_of(history.operations.begin(), history.operations.end(), [&](const Operation& newer) {
                return newer.result == "applied" && newer.record == older.record &&
                       newer.acquired_ns > older.acquired_ns && newer.end_ns < older.write_ns;
            });
        if (overtaken) ++stale;
    }
    return stale;
}

}  // namespace

std::optional<std::int64_t> failover_moment(const History& history, const char* kind) {
    for (const auto& f : history.faults)
        if (f.target == failover_target && f.kind == kind) return f.start_ns;
    return std::nullopt;
}

FailoverReport make_failover_report(const History& history, const Report& base, std::uint64_t counter_after,
                                    FenceSource source) {
    FailoverReport r;
    r.source = source;
    r.counter_after = counter_after;
    r.attempted = base.attempted;
    r.accepted = base.accepted;
    r.stale_rejected = base.stale_rejected;
    r.lost_updates = base.lost_updates;
    const auto kill = failover_moment(history, kill_kind);
    std::map<std::pair<std::string, std::uint64_t>, int> leases_per_fence;
    std::optional<std::int64_t> first_write_ns;
    for (const auto& op : history.operations) {
        if (op.fence == 0) continue;  // contended: no lease, no fence
        ++leases_per_fence[{op.record, op.fence}];
        if (kill && op.acquired_ns < *kill) r.counter_before = std::max(r.counter_before, op.fence);
        if (kill && op.acquired_ns > *kill)
            r.first_fence_after = std::min(r.first_fence_after.value_or(op.fence), op.fence);
        if (kill && op.acquired_ns > *kill && op.result == "applied")
            first_write_ns = std::min(first_write_ns.value_or(op.end_ns), op.end_ns);
    }
    for (const auto& [fence, leases] : leases_per_fence)
        if (leases > 1) ++r.fences_issued_twice;
    r.counter_regression = static_cast<std::int64_t>(r.counter_before) - static_cast<std::int64_t>(counter_after);
    r.stale_accepted = count_stale_accepted(history);
    if (kill) {
        if (auto promoted = failover_moment(history, promoted_kind)) r.kill_to_promotion = since(*kill, *promoted);
        if (first_write_ns) r.kill_to_first_write = since(*kill, *first_write_ns);
    }
    return r;
}

std::string fences_after_failover(const FailoverReport& r) {
    if (r.source == FenceSource::incr_counter)
        return r.counter_regression > 0 ? fmt::format("went back by {}", r.counter_regression) : "did not go back";
    if (r.fences_issued_twice > 0) return fmt::format("clock-based, {} reissued", r.fences_issued_twice);
    if (r.first_fence_after && *r.first_fence_after <= r.counter_before)
        return fmt::format("clock-based, {} us behind", r.counter_before - *r.first_fence_after);
    return "clock-based, no fence reissued";
}

}  // namespace fencelock::demo
