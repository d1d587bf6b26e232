#include "cluster/cluster_reshard.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

#include "local_servers/sentinel_group.hpp"

namespace fencelock::test_support {

void migrate(const std::vector<std::uint16_t>& ports, std::uint16_t slot, std::uint16_t to) {
    local::SlotMigration move(ports, slot, to);
    move.begin();
    move.move_keys();
    move.finish();
}

std::uint16_t other_master(std::uint16_t port) {
    for (std::uint16_t m : local::master_ports(port))
        if (m != port) return m;
    throw std::runtime_error("one master only");
}

long error_count(std::uint16_t port, std::string_view kind) {
    const std::string info = local::cli_at(port, {"INFO", "errorstats"});
    const std::string field = "errorstat_" + std::string(kind) + ":count=";
    const auto at = info.find(field);
    return at == std::string::npos ? 0 : std::atol(info.c_str() + at + field.size());
}

SlotHome::~SlotHome() {
    try {
        if (local::slot_master_port(home, slot) == home) return;
        migrate(ports, slot, home);
        local::wait_cluster_ready(ports, 3, std::chrono::seconds(30));
    } catch (const std::exception& e) {
        ADD_FAILURE() << "could not move slot " << slot << " home: " << e.what();
    }
}

}  // namespace fencelock::test_support
