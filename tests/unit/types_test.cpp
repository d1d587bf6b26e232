// Strong types: the limits of ResourceName and OwnerToken, random owner tokens, fence order.
#include "fencelock/types.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <type_traits>

namespace {

using fencelock::FencingToken;
using fencelock::OwnerToken;
using fencelock::ResourceName;
using namespace std::string_literals;

TEST(ResourceName, Limits) {
    EXPECT_FALSE(ResourceName::make("").has_value());
    EXPECT_TRUE(ResourceName::make("x").has_value());
    EXPECT_TRUE(ResourceName::make(std::string(ResourceName::max_size, 'a')).has_value());
    const auto too_long = ResourceName::make(std::string(ResourceName::max_size + 1, 'a'));
    ASSERT_FALSE(too_long.has_value());
    EXPECT_FALSE(too_long.error().message.empty());
    EXPECT_EQ(ResourceName::max_size, 1024u);
}

TEST(ResourceName, AcceptsArbitraryBytes) {
    for (const std::string& name :
         {"order {42}"s, "{tag}"s, "a}b"s, "with space"s, "caf\xC3\xA9"s, "nul\0inside"s, "\0"s, "{"s, "x}"s, "{}"s}) {
        const auto r = ResourceName::make(name);
        ASSERT_TRUE(r.has_value()) << r.error().message;
        EXPECT_EQ(r->str(), name);  // byte for byte, NUL included
    }
}

TEST(ResourceName, RefusesLeadingCloseBrace) {
    for (const char* name : {"}", "}abc", "}{x}"}) {
        const auto r = ResourceName::make(name);
        ASSERT_FALSE(r.has_value()) << name;
        EXPECT_FALSE(r.error().message.empty());
    }
}

TEST(ResourceName, EqualityIsByValue) {
    EXPECT_EQ(ResourceName::make("a").value(), ResourceName::make("a").value());
    EXPECT_NE(ResourceName::make("a").value(), ResourceName::make("b").value());
}

TEST(OwnerToken, MakeLimits) {
    EXPECT_FALSE(OwnerToken::make("").has_value());
    EXPECT_TRUE(OwnerToken::make("w").has_value());
    EXPECT_TRUE(OwnerToken::make(std::string(OwnerToken::max_size, 'k')).has_value());
    EXPECT_FALSE(OwnerToken::make(std::string(OwnerToken::max_size + 1, 'k')).has_value());
    EXPECT_EQ(OwnerToken::make("!~az09-_.").value().str(), "!~az09-_.");
}

TEST(OwnerToken, MakeRefusesSpacesControlAndNonAscii) {
    for (const std::string& t : {"a b"s, " a"s, "a\t"s, "a\n"s, "a\0b"s, "a\x7f"s, "caf\xC3\xA9"s, "\x80"s}) {
        const auto r = OwnerToken::make(t);
        ASSERT_FALSE(r.has_value()) << "accepted a token of " << t.size() << " bytes";
        EXPECT_FALSE(r.error().message.empty());
    }
}

TEST(OwnerToken, GenerateIs32LowercaseHex) {
    const OwnerToken t = OwnerToken::generate();
    ASSERT_EQ(t.str().size(), 32u);
    for (char c : t.str()) EXPECT_TRUE((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')) << t.str();
    // A generated token must also be acceptable where tokens come back in (CLI, environment).
    EXPECT_EQ(OwnerToken::make(t.str()).value(), t);
}

TEST(OwnerToken, GeneratedTokensAreDistinct) {
    std::set<std::string> seen;
    for (int i = 0; i < 1000; ++i) seen.insert(OwnerToken::generate().str());
    EXPECT_EQ(seen.size(), 1000u);
}

TEST(OwnerToken, GeneratedTokensUseEveryHexDigit) {
    // 100 tokens = 3200 hex digits; a stuck nibble or a missing letter would show here.
    std::set<char> digits;
    for (int i = 0; i < 100; ++i) {
        const OwnerToken t = OwnerToken::generate();  // keep it alive while iterating
        for (char c : t.str()) digits.insert(c);
    }
    EXPECT_EQ(digits.size(), 16u);
}

TEST(FencingToken, OrdersByValue) {
    constexpr FencingToken a{1}, b{2}, big{18'446'744'073'709'551'615u};
    static_assert(a < b && b > a && a != b && a == FencingToken{1});
    EXPECT_LT(a, b);
    EXPECT_LT(b, big);
    EXPECT_LE(a, a);
    EXPECT_GT(big, FencingToken{0});
    EXPECT_EQ(big.value(), 18'446'744'073'709'551'615u);
}

TEST(FencingToken, IsNotAnInteger) {
    // Strong types: no implicit conversions from raw values.
    static_assert(!std::is_convertible_v<std::uint64_t, FencingToken>);
    static_assert(!std::is_convertible_v<FencingToken, std::uint64_t>);
    static_assert(!std::is_convertible_v<std::string, OwnerToken>);
    static_assert(!std::is_convertible_v<std::string, ResourceName>);
    SUCCEED();
}

}  // namespace
