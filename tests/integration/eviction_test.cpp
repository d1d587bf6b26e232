// A Redis that may evict keys is refused before any command (fail closed), on every kind of
// connection, with an error that names the policy; CONFIG refused by an ACL falls back to
// INFO; the explicit opt-out works. Each refusal checks that Redis is unchanged.
#include <string>

#include "integration/lock_fixture.hpp"

namespace fencelock::test_support {
namespace {

using namespace std::chrono_literals;

class EvictionTest : public LockTest {
protected:
    LockClient client_as(const std::string& user, const std::string& password, bool allow_eviction = false) {
        ClientOptions options;
        options.endpoint = *parse_redis_url(redis->url());
        options.endpoint.user = user;
        options.endpoint.password = password;
        options.endpoint.allow_eviction = allow_eviction;
        auto c = LockClient::create(std::move(options));
        EXPECT_TRUE(c.has_value());
        return std::move(*c);
    }

    void expect_refused(LockClient& c, std::string_view policy_named) {
        const auto r = resource("order:1");
        const std::string before = redis->snapshot();
        auto got = c.try_acquire(r, {.lease = 10s});
        ASSERT_FALSE(got.has_value()) << "acquired on a server that may evict the lease";
        EXPECT_EQ(&got.error().category(), &eviction_category());
        EXPECT_EQ(classify(got.error()), failure_kind::fatal);
        EXPECT_NE(got.error().message().find(policy_named), std::string::npos) << got.error().message();
        auto held = c.hold(r, {.lease = 10s});  // the keeper's and the pool's connections alike
        ASSERT_FALSE(held.has_value());
        EXPECT_EQ(&held.error().category(), &eviction_category());
        EXPECT_EQ(redis->snapshot(), before);
        EXPECT_EQ(redis->cli({"INFO", "commandstats"}).find("cmdstat_evalsha"), std::string::npos)
            << "no script may run before the policy was checked";
    }
};

TEST_F(EvictionTest, EveryEvictingPolicyIsRefusedWithItsName) {
    for (const char* policy : {"allkeys-lru", "volatile-lru", "allkeys-lfu", "volatile-lfu", "allkeys-random",
                               "volatile-random", "volatile-ttl"}) {
        redis->cli({"CONFIG", "SET", "maxmemory-policy", policy});
        auto c = client();
        SCOPED_TRACE(policy);
        expect_refused(c, std::string("maxmemory-policy is ") + policy);
    }
}

TEST_F(EvictionTest, NoevictionIsServed) {
    auto c = client();
    auto got = c.try_acquire(resource("order:1"), {.lease = 10s});
    ASSERT_TRUE(got && got->acquired());
}

TEST_F(EvictionTest, AnAclWithoutConfigFallsBackToInfo) {
    redis->cli({"CONFIG", "SET", "maxmemory-policy", "volatile-lru"});
    redis->cli({"ACL", "SETUSER", "noconfig", "on", ">pw-1", "~*", "&*", "+@all", "-config"});
    auto refused = client_as("noconfig", "pw-1");
    expect_refused(refused, "maxmemory-policy is volatile-lru");

    redis->cli({"CONFIG", "SET", "maxmemory-policy", "noeviction"});
    auto served = client_as("noconfig", "pw-1");
    auto got = served.try_acquire(resource("order:1"), {.lease = 10s});
    ASSERT_TRUE(got && got->acquired()) << (got ? "" : got.error().message());
}

TEST_F(EvictionTest, APolicyThatCannotBeLearnedIsRefused) {
    redis->cli({"ACL", "SETUSER", "blind", "on", ">pw-2", "~*", "&*", "+@all", "-config", "-info"});
    auto c = client_as("blind", "pw-2");
    expect_refused(c, "could not learn");
}

TEST_F(EvictionTest, TheOptOutServesAnEvictingServer) {
    redis->cli({"CONFIG", "SET", "maxmemory-policy", "allkeys-lru"});
    auto c = client_as("", "", /*allow_eviction=*/true);
    auto got = c.try_acquire(resource("order:1"), {.lease = 10s});
    ASSERT_TRUE(got && got->acquired()) << (got ? "" : got.error().message());
}

}  // namespace
}  // namespace fencelock::test_support
