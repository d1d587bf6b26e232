#pragma once
// Moving slots between masters in a test, the way `redis-cli --cluster reshard` does
// (local::SlotMigration: MIGRATING/IMPORTING, MIGRATE, SETSLOT NODE), whole or stopped in
// its ASK window, and what a test reads while it happens.
#include <cstdint>
#include <string_view>
#include <vector>

#include "local_servers/cluster_group.hpp"

namespace fencelock::test_support {

/// Moves `slot` to the master at `to` in one go; `ports` are the cluster's nodes.
void migrate(const std::vector<std::uint16_t>& ports, std::uint16_t slot, std::uint16_t to);

/// Another master than the one at `port`.
std::uint16_t other_master(std::uint16_t port);

/// How many `kind` errors (TRYAGAIN, MOVED, ASK) the server at `port` has answered
/// (INFO errorstats).
long error_count(std::uint16_t port, std::string_view kind);

/// Moves the slot back to its first master when the test ends, passed or not.
struct SlotHome {
    std::vector<std::uint16_t> ports;
    std::uint16_t slot, home;
    ~SlotHome();
};

}  // namespace fencelock::test_support
