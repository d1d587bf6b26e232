#pragma once
// The Sentinel group of a ctest run: the sentinel_group fixture (tests/server_fixture_main.cpp)
// starts a master, a replica and three sentinels once, and FENCELOCK_SENTINEL_STATE names the
// file holding its redis-sentinel:// URL. Run by hand (no such variable), the test process
// starts a group of its own. Tests that fail the group over hold the ctest RESOURCE_LOCK and
// leave it ready again.
//
// The tests' URL sets a failover grace of test_failover_grace (the default 30 s would hold
// every acquisition for 30 s after each failover, and after the sentinels start); the group
// is handed out once the sentinels have known its master that long.
#include <chrono>
#include <memory>
#include <string>

#include "fencelock/redis_url.hpp"
#include "local_servers/sentinel_group.hpp"

namespace fencelock::test_support {

inline constexpr std::chrono::milliseconds test_failover_grace{2000};

/// `url` (redis-sentinel://...#name) with `query` added before the fragment.
std::string with_query(const std::string& url, const std::string& query);

class SharedSentinelGroup {
public:
    /// The group of this run (started on first use when there is no fixture).
    static SharedSentinelGroup& get();

    const std::string& url() const { return url_; }
    const RedisEndpoint& endpoint() const { return endpoint_; }
    const local::SentinelGroupShape& shape() const { return shape_; }
    /// The port of the master a majority of sentinels names now.
    std::uint16_t master_port() const;
    /// redis-cli against the current master.
    std::string master_cli(const std::vector<std::string>& args) const;

    /// Waits until every sentinel has known the master for at least test_failover_grace.
    void wait_past_grace() const;

    /// A graceful failover (SENTINEL FAILOVER on one sentinel); returns once a majority names
    /// another master that answers ROLE master, and the group is ready again. Returns the new
    /// master's port. The new master's failover grace is not waited for.
    std::uint16_t fail_over(std::chrono::milliseconds timeout = std::chrono::seconds(60)) const;

private:
    SharedSentinelGroup();
    std::unique_ptr<local::SentinelGroup> own_;  // only without a fixture
    std::string url_;
    RedisEndpoint endpoint_;
    local::SentinelGroupShape shape_;
};

}  // namespace fencelock::test_support
