#pragma once
// What `fencelock demo --json` must show on any coordinator: with fencing nothing acknowledged
// is lost or duplicated and the store rejected stale writes; without it the same seeded faults
// lost acknowledged appends and the store rejected nothing.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace fencelock::test_support {

inline void expect_fencing_prevents_the_damage(const nlohmann::json& fenced, const nlohmann::json& unfenced) {
    EXPECT_GT(fenced["accepted"].get<int>(), 0);
    EXPECT_EQ(fenced["lost_updates"], 0);
    EXPECT_EQ(fenced["duplicates"], 0);
    EXPECT_EQ(unfenced["stale_rejected"], 0) << "without fencing the store rejects nothing";
    EXPECT_GT(unfenced["lost_updates"].get<int>(), 0) << "the seeded faults must show the damage";
    EXPECT_GT(fenced["stale_rejected"].get<int>(), 0) << "the same faults produce stale writes that fencing stops";
}

}  // namespace fencelock::test_support
