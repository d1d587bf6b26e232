#pragma once
// Integration fixture: a private redis-server per test and clients pointed at it.
// Under FENCELOCK_TEST_TRANSPORT=tls (the tls.* ctest entries) it is a managed-Redis server
// (support/managed_redis.hpp) and clients are its fencelock-locks user over rediss://.
#include <gtest/gtest.h>

#include <memory>
#include <optional>

#include "fencelock/client.hpp"
#include "fencelock/redis_url.hpp"
#include "local_servers/redis_server.hpp"
#include "support/eventually.hpp"
#include "support/managed_redis.hpp"

namespace fencelock::test_support {

inline ResourceName resource(std::string_view name) { return *ResourceName::make(name); }

class LockTest : public ::testing::Test {
protected:
    void SetUp() override {
        redis = tls_under_test() ? std::make_unique<local::RedisServer>(managed_redis_options())
                                 : std::make_unique<local::RedisServer>();
    }

    /// The URL clients (and child processes) connect with: redis->url(), or under
    /// tls_under_test() the rediss:// URL of fencelock-locks with the test CA and client pair.
    std::string client_url() const { return tls_under_test() ? managed_redis_url(*redis, locks_user) : redis->url(); }

    LockClient client(ClientOptions options = {}) {
        options.endpoint = *parse_redis_url(client_url());
        auto c = LockClient::create(std::move(options));
        EXPECT_TRUE(c.has_value());
        return std::move(*c);
    }

    /// True once Redis no longer holds a lease for `r` (expired or released).
    bool lock_gone(LockClient& c, const ResourceName& r) {
        auto info = c.inspect(r);
        return info && !info->holder;
    }

    /// A lease on `r` its holder keeps for a minute unless it releases it.
    static std::optional<Lease> hold_for_a_minute(LockClient& c, const ResourceName& r) {
        auto held = c.try_acquire(r, {.lease = std::chrono::seconds(60)});
        if (!held || !held->acquired()) return std::nullopt;
        return held->lease;
    }
    /// The server's clock `ahead` from now, in ms as the scripts store a place's deadline (a
    /// place is at most limits' 2 h + 2 s long: one further off counts as damaged).
    std::string server_ms_ahead(std::chrono::milliseconds ahead) {
        const std::string t = redis->cli({"TIME"});
        return std::to_string(std::stoull(t.substr(0, t.find('\n'))) * 1000 +
                              static_cast<std::uint64_t>(ahead.count()));
    }
    /// EVALSHA calls the server has executed so far (acquire attempts included).
    long script_calls() {
        const std::string stats = redis->cli({"INFO", "commandstats"});
        const std::string marker = "cmdstat_evalsha:calls=";
        auto at = stats.find(marker);
        return at == std::string::npos ? 0 : std::stol(stats.substr(at + marker.size()));
    }

    std::unique_ptr<local::RedisServer> redis;
};

}  // namespace fencelock::test_support
