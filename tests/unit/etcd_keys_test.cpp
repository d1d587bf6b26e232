// The etcd coordinator's key layout and value codecs (coordinator/etcd/etcd_keys.hpp): pure.
#include <gtest/gtest.h>

#include "coordinator/etcd/etcd_keys.hpp"

namespace fencelock::detail::etcd {
namespace {

ResourceName resource(std::string_view name) { return *ResourceName::make(name); }

TEST(EtcdKeys, OneResourcesRangeNeverHoldsAnothersKeys) {
    const EtcdKeys keys("app/");
    const auto a = keys.lock_range(resource("a"));
    const auto ab = keys.lock_range(resource("a/b"));
    const auto owner = *OwnerToken::make("tok");
    const std::string ab_key = keys.lock_key(resource("a/b"), owner);
    const std::string a_key = keys.lock_key(resource("a"), owner);
    EXPECT_EQ(a_key, "app/fencelock/lock/a/tok");
    EXPECT_EQ(ab_key, "app/fencelock/lock/a%2Fb/tok");
    const auto in = [](const KeyRange& r, const std::string& k) { return k >= r.begin && k < r.end; };
    EXPECT_TRUE(in(a, a_key));
    EXPECT_FALSE(in(a, ab_key));
    EXPECT_TRUE(in(ab, ab_key));
    EXPECT_FALSE(in(ab, a_key));
    // "a" and "a0" differ in their last byte, not in a prefix.
    EXPECT_FALSE(in(a, keys.lock_key(resource("a0"), owner)));
}

TEST(EtcdKeys, EscapingRoundTripsAnyBytes) {
    const std::string names[] = {"plain",         "with space", "a/b%c", std::string("nul\0byte", 8),
                                 "utf8 \xc3\xa9", "{braces}",   "%2F"};
    for (const auto& name : names) {
        const std::string escaped = escape_resource(name);
        EXPECT_EQ(escaped.find('/'), std::string::npos) << escaped;
        EXPECT_EQ(escaped.find(' '), std::string::npos) << escaped;
        EXPECT_EQ(unescape_resource(escaped), name);
    }
    EXPECT_FALSE(unescape_resource("bad%4"));
    EXPECT_FALSE(unescape_resource("bad%zz"));
}

TEST(EtcdKeys, ALeaseKeyNamesItsResourceAndOwner) {
    const EtcdKeys keys("");
    const auto parts = keys.parse_lock_key(keys.lock_key(resource("x/y z"), *OwnerToken::make("o1")));
    ASSERT_TRUE(parts);
    EXPECT_EQ(parts->resource, "x/y z");
    EXPECT_EQ(parts->owner, "o1");
    EXPECT_FALSE(keys.parse_lock_key("fencelock/fence/x"));
    EXPECT_FALSE(keys.parse_lock_key("fencelock/lock/x/"));
    EXPECT_FALSE(keys.parse_lock_key("other/lock/x/o"));
}

TEST(EtcdKeys, PrefixEndIsTheFirstKeyPastThePrefix) {
    EXPECT_EQ(prefix_end("abc"), "abd");
    EXPECT_EQ(prefix_end(std::string("a\xff", 2)), "b");
    EXPECT_EQ(prefix_end(std::string("\xff", 1)), std::string(1, '\0'));
}

TEST(EtcdKeys, TheLeaseValueKeepsItsHolderAndALabelWithSpaces) {
    const LeaseValue value{.acquired_ms = 1'700'000'000'000,
                           .lease_ms = 30'000,
                           .max_hold_ms = 3'600'000,
                           .pid = 4242,
                           .host = "web 1",
                           .label = "nightly backup  run"};
    const auto decoded = decode_lease_value(encode_lease_value(value));
    ASSERT_TRUE(decoded);
    EXPECT_EQ(decoded->acquired_ms, value.acquired_ms);
    EXPECT_EQ(decoded->lease_ms, value.lease_ms);
    EXPECT_EQ(decoded->max_hold_ms, value.max_hold_ms);
    EXPECT_EQ(decoded->pid, 4242);
    EXPECT_EQ(decoded->host, "web_1");
    EXPECT_EQ(decoded->label, "nightly backup  run");
    EXPECT_FALSE(decode_lease_value("v2 1 2 3 4 h l"));
    EXPECT_FALSE(decode_lease_value("v1 x 2 3 4 h l"));
    EXPECT_FALSE(decode_lease_value("v1 1 2 3"));
}

}  // namespace
}  // namespace fencelock::detail::etcd
