#pragma once
// Integration fixture: a throwaway master with one replica in sync (replicaof, loopback), for
// the replica acknowledgement tests. The replica can be paused (SIGSTOP) to withhold its ACKs.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "local_servers/redis_server.hpp"
#include "support/eventually.hpp"

namespace fencelock::test_support {

class ReplicatedRedisTest : public ::testing::Test {
protected:
    void SetUp() override {
        // The master decides when the first sync starts (by default 5 s after a replica asks).
        master = std::make_unique<local::RedisServer>(std::vector<std::string>{"--repl-diskless-sync-delay", "0"});
        replica = std::make_unique<local::RedisServer>(
            std::vector<std::string>{"--replicaof", "127.0.0.1", std::to_string(master->port())});
        ASSERT_TRUE(eventually([&] {
            return master->cli({"INFO", "replication"}).find("state=online") != std::string::npos;
        })) << master->cli({"INFO", "replication"});
    }
    void TearDown() override {
        if (replica) replica->resume();  // a stopped server cannot be shut down cleanly
    }

    /// How many times the master ran `command` (lower case, as INFO commandstats names it).
    long stat_calls(const std::string& command) const {
        const std::string stats = master->cli({"INFO", "commandstats"});
        const std::string marker = "cmdstat_" + command + ":calls=";
        const auto at = stats.find(marker);
        return at == std::string::npos ? 0 : std::stol(stats.substr(at + marker.size()));
    }

    bool on_master(const std::string& key) const { return master->cli({"EXISTS", key}) == "1"; }

    std::unique_ptr<local::RedisServer> master;
    std::unique_ptr<local::RedisServer> replica;
};

}  // namespace fencelock::test_support
