#include "faults/locked_job.hpp"

namespace fencelock::faults {

bool run_locked_job(LockClient& client, Recorder& recorder, RmwWorker& worker, const std::string& resource,
                    const std::string& element, const AcquireOptions& options, LockedJobCounts& counts) {
    const auto acquire_id = recorder.invoke(OpKind::acquire, resource);
    auto got = client.acquire(res(resource), options);
    if (got) {
        counts.attempts += got->attempts;
        counts.unsuccessful_attempts += got->unsuccessful_attempts;
    }
    if (!got || !got->acquired()) {
        recorder.complete(acquire_id, got ? Outcome::fail : Outcome::unknown, 0, {},
                          got ? "contended" : got.error().message());
        return false;
    }
    const Lease& lease = *got->lease;
    recorder.complete(acquire_id, Outcome::ok, lease.fence.value());
    bool done = false;
    const auto start = now_ns();
    const std::string base = worker.read(resource, lease.fence.value());
    if (still_valid(lease)) {
        recorder.hold(resource, lease.fence.value(), start, now_ns());
        done = worker.write(resource, base, element, lease.fence.value()) == TargetStatus::applied;
    }
    (void)client.release(res(resource), lease.owner);
    return done;
}

}  // namespace fencelock::faults
