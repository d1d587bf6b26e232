// Redis Cluster slots: CRC16-XMODEM with the hash-tag rule, checked against what
// `CLUSTER KEYSLOT` answered on a real redis-server 7.0.15 (cluster-enabled yes).
#include "redis/cluster_slot.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "coordinator/redis/keys.hpp"
#include "fencelock/types.hpp"

namespace fencelock::detail {
namespace {

using namespace std::string_literals;

TEST(KeySlot, MatchesClusterKeyslotOfARealServer) {
    const std::pair<const char*, std::uint16_t> known[] = {
        {"", 0},
        {"123456789", 12739},  // CRC16-XMODEM's check value 0x31C3, mod 16384
        {"foo", 12182},
        {"bar", 5061},
        {"{user1000}.following", 3443},
        {"foo{}{bar}", 8363},     // empty first tag: the whole key is hashed
        {"foo{{bar}}zap", 4015},  // the tag is "{bar"
        {"foo{bar}{zap}", 5061},  // only the first tag counts: same as "bar"
        {"{}", 15257},
        {"fencelock:lock:{orders/42}", 1029},
        {"lock:{a}", 15495},
        {"a", 15495},
        {"}{a}", 15495},
        {"{a", 10276},  // no closing brace: the whole key
        {"fencelock:audit", 11852},
        {"ab{c}d", 7365},
        {"{Q}", 2772},
    };
    for (const auto& [key, slot] : known) EXPECT_EQ(key_slot(key), slot) << '"' << key << '"';
}

TEST(KeySlot, EveryKeyOfAResourceSharesTheSlotOfItsName) {
    for (const std::string& name : {"orders/42"s, "a{b"s, "x}"s, "caf\xC3\xA9"s, "a\0b"s}) {
        const auto keys = make_keys("app:", *ResourceName::make(name));
        const auto slot = key_slot(keys.lock);
        for (const auto& k :
             {keys.fence, keys.waiters, keys.waiter_deadlines, keys.sleepers, keys.released, keys.audit})
            EXPECT_EQ(key_slot(k), slot) << k;
    }
}

std::optional<std::string_view> key_of(std::vector<std::string_view> argv) { return routing_key(argv); }

TEST(RoutingKey, ScriptsRouteByTheirFirstKey) {
    EXPECT_EQ(key_of({"EVALSHA", "abc", "2", "lock:{r}", "fence:{r}", "owner"}), "lock:{r}");
    EXPECT_EQ(key_of({"eval", "return 1", "1", "k"}), "k");
    EXPECT_EQ(key_of({"EVAL", "return 1", "0", "arg"}), std::nullopt);
    EXPECT_EQ(key_of({"EVAL", "return 1", "x", "k"}), std::nullopt);
}

TEST(RoutingKey, PlainCommandsAndKeylessOnes) {
    EXPECT_EQ(key_of({"GET", "fence:{r}"}), "fence:{r}");
    EXPECT_EQ(key_of({"XREVRANGE", "audit:{r}", "+", "-"}), "audit:{r}");
    EXPECT_EQ(key_of({"XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "q:{Q}", ">"}), "q:{Q}");
    EXPECT_EQ(key_of({"XGROUP", "CREATE", "q:{Q}", "g", "0", "MKSTREAM"}), "q:{Q}");
    EXPECT_EQ(key_of({"SCAN", "0", "MATCH", "lock:*"}), std::nullopt);
    EXPECT_EQ(key_of({"TIME"}), std::nullopt);
    EXPECT_EQ(key_of({"CONFIG", "GET", "maxmemory-policy"}), std::nullopt);
    EXPECT_EQ(key_of({"WAIT", "1", "200"}), std::nullopt);  // "1" is a replica count, not a key
}

}  // namespace
}  // namespace fencelock::detail
