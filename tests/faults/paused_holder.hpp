#pragma once
// The paused-holder scenario's body, for any coordinator: a holder process (fault_worker) frozen
// with SIGSTOP between its last validity check and its write, until its lease has expired,
// another holder has taken over and written, and at least `pause` has passed; then it resumes
// and writes with its old fence. Fenced: the target rejects the stale write. Unfenced: it
// overwrites the newer owner's append. Redis runs it with three leases of pause
// (holder_paused_scenario_test.cpp), etcd with its 2 s lease (etcd_holder_paused_scenario_test.cpp).
#include <chrono>
#include <string>

#include "faults/scenario.hpp"

namespace fencelock::faults {

struct PausedHolderCase {
    /// The scenario's name in its summary line.
    std::string scenario;
    /// What the A holder and the taker connect to.
    std::string url;
    std::chrono::milliseconds lease;
    /// The least time A stays frozen.
    std::chrono::milliseconds pause{0};
    /// Extra summary field: the coordinator's name, if not Redis.
    std::string coordinator{};
};

class PausedHolder : public ScenarioTest {
protected:
    void run_case(const PausedHolderCase& c);
};

}  // namespace fencelock::faults
