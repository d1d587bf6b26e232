// The CLI's output for people (tools/fencelock/human_output.hpp): which format a command
// chooses, durations and times as people read them, and tables whose columns line up.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sstream>

#include "human_output.hpp"

namespace fencelock::cli {
namespace {

using nlohmann::json;

TEST(HumanOutput, ATerminalGetsATableAndAnythingElseJsonUnlessAFlagSays) {
    EXPECT_EQ(chosen_format({}, true), Format::table);
    EXPECT_EQ(chosen_format({}, false), Format::json);
    EXPECT_EQ(chosen_format({.json = true}, true), Format::json);
    EXPECT_EQ(chosen_format({.table = true}, false), Format::table);
}

TEST(HumanOutput, DurationsReadAsPeopleSayThem) {
    EXPECT_EQ(human_duration(0), "0ms");
    EXPECT_EQ(human_duration(850), "850ms");
    EXPECT_EQ(human_duration(1000), "1.0s");
    EXPECT_EQ(human_duration(12'349), "12.3s");
    EXPECT_EQ(human_duration(59'999), "59.9s");
    EXPECT_EQ(human_duration(245'000), "4m05s");
    EXPECT_EQ(human_duration(7'620'000), "2h07m");
    EXPECT_EQ(human_duration(273'600'000), "3d04h");
    EXPECT_EQ(human_duration(-1500), "-1.5s");
}

TEST(HumanOutput, TimesAreUtc) {
    EXPECT_EQ(human_time(0), "1970-01-01 00:00:00Z");
    EXPECT_EQ(human_time(1'796'644'862'123), "2026-12-07 12:01:02Z");
}

TEST(HumanOutput, ColumnsLineUpUnderTheirHeadingsCountingCharactersNotBytes) {
    const std::vector<Column> columns{field_column("RESOURCE", "resource"), field_column("FENCE", "fence"),
                                      duration_column("TTL", "pttl_ms"), field_column("LABEL", "label")};
    const std::vector<json> records{
        {{"resource", "order:42"}, {"fence", 17}, {"pttl_ms", 29'500}, {"label", "nightly"}},
        {{"resource", "commande:é"}, {"fence", 1234567}, {"pttl_ms", 800}}};
    std::ostringstream out;
    print_table(out, columns, records);
    EXPECT_EQ(out.str(),
              "RESOURCE    FENCE    TTL    LABEL\n"
              "order:42    17       29.5s  nightly\n"
              "commande:é  1234567  800ms  -\n");
}

TEST(HumanOutput, FieldsAlignTheirNames) {
    std::ostringstream out;
    print_fields(out, {{"resource", "order:42"}, {"held", "yes"}, {"last fence", "17"}});
    EXPECT_EQ(out.str(),
              "resource    order:42\n"
              "held        yes\n"
              "last fence  17\n");
}

}  // namespace
}  // namespace fencelock::cli
