#pragma once
// One read-modify-write job under the lock, as the load scenarios run it (the contention storm,
// the etcd leader killed): acquire with waiting (recorded; an error is recorded as unknown, since
// it may hide a grant), read, check the lease is still valid, append with the fence, release.
#include <atomic>
#include <cstdint>
#include <string>

#include "faults/scenario.hpp"

namespace fencelock::faults {

struct LockedJobCounts {
    std::atomic<std::int64_t> attempts{0};
    std::atomic<std::int64_t> unsuccessful_attempts{0};
};

/// True when the job's write was applied.
bool run_locked_job(LockClient& client, Recorder& recorder, RmwWorker& worker, const std::string& resource,
                    const std::string& element, const AcquireOptions& options, LockedJobCounts& counts);

}  // namespace fencelock::faults
