#pragma once
// The workload every scenario runs, recorded: read a record, append this job's element, write
// it back with the lease's fence. A stale write that gets through overwrites appends made by
// newer owners, which the final-state check then reports as lost.
#include <cstdint>
#include <string>

#include "faults/fault_history.hpp"
#include "faults/target.hpp"

namespace fencelock::faults {

class RmwWorker {
public:
    RmwWorker(Recorder& recorder, Target& target) : recorder_(recorder), target_(target) {}

    /// Reads `resource` and records the read; returns the value.
    std::string read(const std::string& resource, std::uint64_t fence);
    /// Writes `base` with `element` appended, under `fence`, using `element` as idempotency key.
    /// Records the write: ok when applied, fail (note: stale/duplicate) otherwise.
    TargetStatus write(const std::string& resource, const std::string& base, const std::string& element,
                       std::uint64_t fence);

    Recorder& recorder() noexcept { return recorder_; }

private:
    Recorder& recorder_;
    Target& target_;
};

/// `list` with `element` appended (comma-separated).
std::string appended(const std::string& list, const std::string& element);

}  // namespace fencelock::faults
