// The lease's `meta` text: what acquire sends as the holder, and what inspect reads back.
#include "coordinator/redis/calls/lease_meta.hpp"

#include <gtest/gtest.h>

namespace {

using fencelock::detail::holder_text;
using fencelock::detail::HolderMeta;
using fencelock::detail::parse_lease_meta;

TEST(LeaseMeta, TheHolderReadsBackWhateverItsLabelHolds) {
    const HolderMeta holder{.host = "worker-7", .pid = "4242", .label = "nightly run 3"};
    const auto meta = parse_lease_meta("1764000000000 30000 60000 " + holder_text(holder));
    ASSERT_TRUE(meta);
    EXPECT_EQ(meta->acquired_ms, 1764000000000);
    EXPECT_EQ(meta->lease_ms, 30000);
    EXPECT_EQ(meta->max_hold_ms, 60000);
    EXPECT_EQ(meta->pid, 4242);
    EXPECT_EQ(meta->host, "worker-7");
    EXPECT_EQ(meta->label, "nightly run 3");
}

TEST(LeaseMeta, AHostWithSpacesCannotEatTheLabel) {
    EXPECT_EQ(holder_text({.host = "odd host", .pid = "1", .label = "x y"}), "1 odd_host x y");
    EXPECT_EQ(holder_text({.host = "", .pid = "1", .label = ""}), "1  ");
    const auto empty = parse_lease_meta("1 2 3 1  ");
    ASSERT_TRUE(empty);
    EXPECT_EQ(empty->host, "");
    EXPECT_EQ(empty->label, "");
}

TEST(LeaseMeta, ADamagedMetaIsRefused) {
    for (const char* bad : {"", "1 2 3", "1 2 3 4", "x 2 3 4 h l", "1 2 3 4.5 h l", "1 2 -3x 4 h l", "1  2 3 4 h l"})
        EXPECT_FALSE(parse_lease_meta(bad)) << bad;
}

}  // namespace
