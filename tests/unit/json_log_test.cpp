// The JSON log line format, fed events by hand: an RFC 3339 UTC timestamp on every line, numbers
// and booleans with their JSON types, fields that do not apply left out. No servers.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <regex>

#include "common/log.hpp"
#include "fencelock/logging.hpp"

namespace fencelock {
namespace {

const std::regex rfc3339_utc_ms(R"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z)");

TEST(JsonLog, LinesHaveATimestampAndTypedNumbers) {
    std::vector<std::string> lines;
    JsonLogObserver log(LogOptions{.level = LogLevel::debug,
                                   .raw_resource_ids = false,
                                   .sink = [&](std::string_view l) { lines.emplace_back(l); }});
    const auto r = ResourceName::make("order:1").value();
    const auto owner = OwnerToken::generate();
    log.on_acquire({r,
                    owner,
                    AcquireResult::acquired,
                    FencingToken(1796138341735077),
                    3,
                    std::chrono::microseconds(1250),
                    std::chrono::milliseconds(30000),
                    {},
                    2,
                    0});
    log.on_renew({r, owner, RenewStatus::renewed, FencingToken(7), std::chrono::milliseconds(30000), true});
    log.on_fence_rejected({"order:1", FencingToken(5), FencingToken(9), StoreOperation::claim});
    ASSERT_EQ(lines.size(), 3u);

    const auto acquired = nlohmann::json::parse(lines[0]);
    ASSERT_TRUE(acquired["ts"].is_string()) << lines[0];
    EXPECT_TRUE(std::regex_match(acquired["ts"].get<std::string>(), rfc3339_utc_ms)) << acquired["ts"];
    EXPECT_EQ(acquired["fence"], 1796138341735077u) << "a fence is a number, exactly";
    EXPECT_EQ(acquired["attempts"], 3);
    EXPECT_EQ(acquired["contended_attempts"], 2);
    EXPECT_EQ(acquired["lease_ms"], 30000);
    EXPECT_DOUBLE_EQ(acquired["wait_ms"].get<double>(), 1.25);
    EXPECT_FALSE(acquired.contains("error")) << "fields that do not apply are left out";
    const auto renewed = nlohmann::json::parse(lines[1]);
    EXPECT_EQ(renewed["kept"], true);
    EXPECT_EQ(renewed["fence"], 7);
    const auto rejected = nlohmann::json::parse(lines[2]);
    EXPECT_EQ(rejected["event"], "fence_rejected");
    EXPECT_EQ(rejected["level"], "warn");
    EXPECT_EQ(rejected["last_fence"], 9);
    EXPECT_EQ(rejected["operation"], "claim");
}

TEST(JsonLog, TimestampsAreUtcWithMilliseconds) {
    using namespace std::chrono;
    const sys_time<milliseconds> t =
        sys_days{year{2026} / 12 / 1} + hours(15) + minutes(4) + seconds(5) + milliseconds(7);
    EXPECT_EQ(detail::rfc3339_utc(t), "2026-12-01T15:04:05.007Z");
    EXPECT_EQ(detail::rfc3339_utc(system_clock::time_point{}), "1970-01-01T00:00:00.000Z");
}

TEST(JsonLog, FieldValuesKeepTheirJsonTypes) {
    std::string line = "{";
    detail::append_json_field(line, "n", std::uint64_t{18446744073709551615u});
    detail::append_json_field(line, "neg", -3);
    detail::append_json_field(line, "ms", 0.5);
    detail::append_json_field(line, "nan", std::nan(""));
    detail::append_json_field(line, "yes", false);
    detail::append_json_field(line, "text", "a \"quoted\"\nline");
    detail::append_json_field(line, "absent", LogValue());
    detail::append_json_field(line, "empty", "");
    detail::append_json_field(line, "none", std::optional<int>());
    line += "}";
    line.erase(1, 1);  // the comma before the first field
    const auto j = nlohmann::json::parse(line);
    EXPECT_EQ(j["n"].get<std::uint64_t>(), 18446744073709551615u);
    EXPECT_EQ(j["neg"], -3);
    EXPECT_EQ(j["ms"], 0.5);
    EXPECT_TRUE(j["nan"].is_null());
    EXPECT_EQ(j["yes"], false);
    EXPECT_EQ(j["text"], "a \"quoted\"\nline");
    EXPECT_EQ(j.size(), 6u) << line;
}

}  // namespace
}  // namespace fencelock
