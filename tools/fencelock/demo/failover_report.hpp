#pragma once
// The figures of one `fencelock demo --failover` run, computed from its history: what the
// failover did to the fence counter, and what the store accepted because of it. Pure: no I/O.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "demo/events.hpp"

namespace fencelock::demo {

/// The failover's moments, recorded as Fault entries with this target and these kinds.
inline constexpr const char* failover_target = "failover";
inline constexpr const char* cut_kind = "cut";            ///< replication to the replica cut
inline constexpr const char* kill_kind = "kill";          ///< the master killed (SIGKILL)
inline constexpr const char* promoted_kind = "promoted";  ///< the sentinels' new master answers

/// Where a run's fences come from, which decides what a failover does to them.
enum class FenceSource {
    /// A plain INCR counter beside the lease: the promoted master counts on from what it had
    /// replicated, so a failover that lost writes sends it back and it reissues fences.
    incr_counter,
    /// fencelock's: max(counter + 1, Redis TIME in microseconds). The promoted master's counter
    /// is behind too, but its fences continue from its own clock, past every fence issued before
    /// (as long as the servers' clocks agree to within the failover time).
    redis_clock,
};

struct FailoverReport {
    FenceSource source = FenceSource::incr_counter;
    std::uint64_t counter_before = 0;  ///< highest fence issued before the master was killed
    std::uint64_t counter_after = 0;   ///< the promoted master's counter (what it had replicated)
    /// counter_before - counter_after: how far the counter went back (> 0: writes were lost).
    /// A regression only for incr_counter; clock-based fences do not count on from the counter.
    std::int64_t counter_regression = 0;
    /// The lowest fence of a lease taken after the kill (nullopt: none was taken).
    std::optional<std::uint64_t> first_fence_after;
    std::uint64_t fences_issued_twice = 0;  ///< fence values handed to more than one lease
    std::uint64_t attempted = 0;
    std::uint64_t accepted = 0;
    /// Writes the store accepted although a lease acquired after theirs had already had a
    /// write accepted: the older holder overwrote the newer one.
    std::uint64_t stale_accepted = 0;
    std::uint64_t stale_rejected = 0;
    std::uint64_t lost_updates = 0;  ///< acknowledged appends missing from the final record
    std::optional<std::chrono::milliseconds> kill_to_promotion;
    /// From the kill to the first accepted write of a lease taken after it: time to recover.
    std::optional<std::chrono::milliseconds> kill_to_first_write;
};

/// `base` gives attempted/accepted/stale_rejected/lost_updates (make_report over the same
/// history); `counter_after` is read from the promoted master.
FailoverReport make_failover_report(const History& history, const Report& base, std::uint64_t counter_after,
                                    FenceSource source);

/// What the failover did to the fences, in words: "went back by 5" for a plain counter;
/// "clock-based, no fence reissued" for fencelock's when none was (else how many were, or how far
/// behind the clock's first fence was).
std::string fences_after_failover(const FailoverReport& report);

/// The time of the first fault of the failover target with `kind` (nullopt: none).
std::optional<std::int64_t> failover_moment(const History& history, const char* kind);

}  // namespace fencelock::demo
