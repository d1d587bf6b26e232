// parse_duration accepts only "<positive integer><unit>"; format_duration writes the same form.
#include "fencelock/duration.hpp"
#include "fencelock/options.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace {

using fencelock::format_duration;
using fencelock::parse_duration;
using namespace std::chrono_literals;
using std::chrono::milliseconds;

TEST(ParseDuration, AcceptsEachUnit) {
    EXPECT_EQ(parse_duration("250ms").value(), 250ms);
    EXPECT_EQ(parse_duration("30s").value(), 30'000ms);
    EXPECT_EQ(parse_duration("5m").value(), 300'000ms);
    EXPECT_EQ(parse_duration("2h").value(), 7'200'000ms);
    EXPECT_EQ(parse_duration("1ms").value(), 1ms);
    EXPECT_EQ(parse_duration("007s").value(), 7'000ms);  // leading zeros are harmless
}

// Nothing longer than limits::duration (365 days) is read, so no deadline computed from a
// parsed duration can overflow the clock (10000000h once wrapped a --wait into one attempt).
TEST(ParseDuration, LongestDurationIsAYear) {
    EXPECT_EQ(parse_duration("8760h").value(), fencelock::limits::duration);
    EXPECT_EQ(parse_duration("31536000000ms").value(), fencelock::limits::duration);
    EXPECT_FALSE(parse_duration("8761h").has_value());
    EXPECT_FALSE(parse_duration("31536000001ms").has_value());
    EXPECT_FALSE(parse_duration("10000000h").has_value());
    EXPECT_FALSE(parse_duration("9223372036854775807ms").has_value());
    EXPECT_FALSE(parse_duration("2562047788016h").has_value());
    EXPECT_NE(parse_duration("8761h").error().message.find("at most 8760h"), std::string::npos)
        << parse_duration("8761h").error().message;
}

// Each of these must be refused with a message that names the input.
class ParseDurationRejects : public ::testing::TestWithParam<const char*> {};

TEST_P(ParseDurationRejects, WithAMessage) {
    const std::string text = GetParam();
    const auto r = parse_duration(text);
    ASSERT_FALSE(r.has_value()) << "accepted '" << text << "' as " << r->count() << "ms";
    EXPECT_FALSE(r.error().message.empty());
    EXPECT_NE(r.error().message.find("'" + text + "'"), std::string::npos) << r.error().message;
}

INSTANTIATE_TEST_SUITE_P(BadInput, ParseDurationRejects,
                         ::testing::Values("", "30", "0", "0s", "0ms", "00h", "-5s", "-0s", "+5s", "5x", "5sec", "5S",
                                           "5MS", "s", "ms", " 5s", "5s ", "5 s", "1.5s", ".5s", "1e3ms", "5s5", "5ms2",
                                           "9999999999999999999h", "99999999999999999999ms", "9223372036854775807s",
                                           "9223372036854775808ms", "153722867280913m"));

TEST(FormatDuration, ChoosesLargestExactUnit) {
    EXPECT_EQ(format_duration(250ms), "250ms");
    EXPECT_EQ(format_duration(1'000ms), "1s");
    EXPECT_EQ(format_duration(1'500ms), "1500ms");
    EXPECT_EQ(format_duration(90'000ms), "90s");
    EXPECT_EQ(format_duration(120'000ms), "2m");
    EXPECT_EQ(format_duration(3'600'000ms), "1h");
    EXPECT_EQ(format_duration(5'400'000ms), "90m");
}

TEST(FormatDuration, RoundTripsThroughParse) {
    for (milliseconds d : {1ms, 999ms, 1'000ms, 1'001ms, 59'000ms, 60'000ms, 61'000ms, 3'599'999ms, 3'600'000ms,
                           86'400'000ms, fencelock::limits::duration}) {
        const std::string text = format_duration(d);
        const auto back = parse_duration(text);
        ASSERT_TRUE(back.has_value()) << text << ": " << back.error().message;
        EXPECT_EQ(*back, d) << text;
    }
}

}  // namespace
