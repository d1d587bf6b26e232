// `fencelock demo --failover`: a Sentinel failover that loses writes sends a plain INCR
// counter backwards, so it reissues fences; fencelock's clock-based fences continue from the
// promoted master's clock, never repeat, and the store accepts no stale write.
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

#include "local_servers/child_process.hpp"

#include <gtest/gtest.h>

namespace fencelock::test_support {
namespace {

using local::run_process;
using nlohmann::json;

TEST(DemoFailoverTest, FencelockFencesSurviveAFailoverThatSendsAPlainCounterBack) {
    const std::string timeline = ::testing::TempDir() + "demo-failover-" + std::to_string(::getpid()) + ".html";
    auto r = run_process({FENCELOCK_CLI, "demo", "--failover", "--json", "--duration", "4s", "--timeline", timeline});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json report = json::parse(r.out);
    const json& plain = report.at("plain_counter");
    const json& ours = report.at("fencelock");
    std::printf("failover plain INCR: %s\nfailover fencelock:  %s\n", plain.dump().c_str(), ours.dump().c_str());

    for (const json* run : {&plain, &ours}) {
        // The schedule ran as planned: two workers frozen at their write, a promotion, then a
        // write accepted for a lease taken after the kill.
        EXPECT_EQ(run->at("frozen_workers"), 2) << r.err;
        ASSERT_FALSE(run->at("kill_to_promotion_ms").is_null()) << r.err;
        ASSERT_FALSE(run->at("kill_to_first_write_ms").is_null()) << r.err;
        // Not compared with kill_to_promotion_ms: that is when the demo *saw* the promotion
        // (polling the sentinels), which a worker on the new master can beat on a loaded host.
        EXPECT_GT(run->at("kill_to_first_write_ms").get<int>(), 0);
        EXPECT_GT(run->at("accepted").get<int>(), 0);
    }

    // Leases were taken after the cut, so the promoted master's counter is behind the highest
    // fence issued; the leases taken after promotion then draw fences that were issued already.
    EXPECT_GT(plain["counter_regression"].get<int>(), 0) << "the failover must lose writes";
    EXPECT_GT(plain["fences_issued_twice"].get<int>(), 0);
    EXPECT_EQ(plain["fence_source"], "incr_counter");
    EXPECT_EQ(plain["fences_after_failover"], "went back by " + plain["counter_regression"].dump());
    // Whether a frozen worker's write is also *accepted* stale depends on a race the schedule
    // cannot settle: the thawed worker writes at once, but only beats the next new holder (who
    // may draw the same fence) if that one is still thinking; so the demo shows it, the test
    // does not insist on it.

    EXPECT_EQ(ours["fences_issued_twice"], 0) << "fencelock's fences never go backwards";
    // Its promoted master's counter is behind too, but its fences come from the clock, which is
    // past every fence issued before: no regression to speak of.
    EXPECT_EQ(ours["fence_source"], "redis_clock");
    EXPECT_TRUE(ours["counter_regression"].is_null());
    ASSERT_FALSE(ours["first_fence_after"].is_null());
    EXPECT_GT(ours["first_fence_after"].get<std::uint64_t>(), ours["counter_before"].get<std::uint64_t>());
    EXPECT_EQ(ours["fences_after_failover"], "clock-based, no fence reissued");
    EXPECT_EQ(ours["stale_accepted"], 0);
    // Not lost_updates: this demo's workers read without a claim (the write's fence alone
    // guards the record, to show the counter going backwards), so a holder starved past its
    // lease between its validity check and its write can still land that write between the
    // next holder's read and write: accepted (its fence is above the last written) and then
    // overwritten. Seen once on a loaded run (lost_updates 1, stale_accepted 0). The claim
    // that closes that window is what the other demos and the fault suite use.
    EXPECT_GT(ours["stale_rejected"].get<int>(), 0) << "the frozen workers' writes are refused";

    std::ifstream in(timeline);
    std::stringstream html;
    html << in.rdbuf();
    for (const char* mark : {">cut<", ">kill<", ">promoted<"})
        EXPECT_NE(html.str().find(mark), std::string::npos) << mark;
    std::remove(timeline.c_str());
}

}  // namespace
}  // namespace fencelock::test_support
