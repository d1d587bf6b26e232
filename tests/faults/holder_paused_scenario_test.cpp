// A holder process frozen with SIGSTOP for 3x its lease, between its last validity check and
// its write (the pause fencing exists for: GC, swapping, a stopped VM). Another holder takes
// over and writes; then the frozen one resumes and writes with its old fence.
// Fenced: the target rejects the stale write. Unfenced: it overwrites the newer owner's append.
// The body is paused_holder.cpp's, which the etcd case shares.
#include "faults/paused_holder.hpp"

namespace fencelock::faults {
namespace {

using namespace std::chrono_literals;

using HolderPaused = PausedHolder;

TEST_P(HolderPaused, StaleWriteAfterThreeLeasesIsRejectedOnlyWithFencing) {
    run_case({.scenario = "holder_paused_3x", .url = redis->url(), .lease = 300ms, .pause = 900ms});
}

INSTANTIATE_TEST_SUITE_P(Faults, HolderPaused, ::testing::ValuesIn(all_backends()), mode_name);

}  // namespace
}  // namespace fencelock::faults
