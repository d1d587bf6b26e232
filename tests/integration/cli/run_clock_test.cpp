// A forward step of the Redis server's wall clock expires every lease on it at once (Redis
// expires keys by mstime()). `run` must stop its command within about a second of the step, so
// a second `run` started 2.5 s after the step never overlaps the first. The server runs under
// the clock shim (tests/support/clock_offset.hpp).
#include <cstdlib>
#include <string>

#include "integration/cli/run_fixture.hpp"
#include "support/clock_offset.hpp"
#include "support/process_state.hpp"

namespace fencelock::test_support {
namespace {

class RunClockTest : public RunTest {
protected:
    void SetUp() override {
        RunTest::SetUp();
        redis = std::make_unique<local::RedisServer>(std::vector<std::string>{}, clock.env());
    }
    ClockOffset clock;
};

TEST_F(RunClockTest, AForwardStepOfTheServersClockStopsTheCommandBeforeTheNextHolderStarts) {
    const pid_t run = start(run_args("stepped", {"--lease", "30s"}, std::string(announce) + "exec sleep 600"));
    const pid_t cmd = wait_started();
    ASSERT_GT(cmd, 0);
    ASSERT_TRUE(lock_exists("stepped"));
    const auto stepped = std::chrono::steady_clock::now();
    clock.step(120s);
    ASSERT_FALSE(lock_exists("stepped")) << "the step did not expire the lease in Redis: proves nothing";

    // The bound the requirement states: the next holder starts 2.5 s after the step.
    const bool stopped = eventually([&] { return process_ended(cmd); }, 2500ms);
    const double stopped_after = seconds_since(stepped);
    EXPECT_TRUE(stopped) << "CMD still ran " << stopped_after << " s after the step, its lease long gone";
    const auto second = local::run_process(run_args("stepped", {"--lease", "30s"}, R"(echo ran > "$1/second")"));
    EXPECT_EQ(second.exit_code, 0) << second.err;
    EXPECT_EQ(wait_exit(run), 76);
    const json j = summary(slurp(path("fencelock.err")));
    EXPECT_EQ(j["lease_lost"], true);
    EXPECT_EQ(j["loss_reason"], "clock_step") << j.dump();
}

// inspect shows how far the server's clock is from this host's: the offset a failover's fences
// depend on (docs/DESIGN.md, "Clock skew").
TEST_F(RunClockTest, InspectShowsTheServersClockOffset) {
    const auto offset = [&] {
        const auto r = local::run_process(cli({"inspect", "offset"}));
        EXPECT_EQ(r.exit_code, 0) << r.err;
        return json::parse(r.out)["server_clock_offset_ms"].get<std::int64_t>();
    };
    EXPECT_LT(std::abs(offset()), 500) << "one machine, one clock";
    clock.set(-60s);
    const auto behind = offset();
    EXPECT_GT(behind, -60'500);
    EXPECT_LT(behind, -59'500);
}

// A connection to a server whose clock is far from this host's says so when it connects, once,
// with the offset: any command, not only one that keeps a lease (the keeper's probe).
TEST_F(RunClockTest, AConnectionToAServerFarOffThisHostsClockSaysSoOnce) {
    clock.set(-60s);
    const auto r = local::run_process(cli({"inspect", "offset"}));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const std::string event = "\"event\":\"redis_clock_offset\"";
    const auto at = r.err.find(event);
    ASSERT_NE(at, std::string::npos) << r.err;
    EXPECT_EQ(r.err.find(event, at + 1), std::string::npos) << "one line per server: " << r.err;
    const std::string line = r.err.substr(r.err.rfind('\n', at) + 1, r.err.find('\n', at) - r.err.rfind('\n', at) - 1);
    const json j = json::parse(line);
    EXPECT_EQ(j["server"], "127.0.0.1:" + std::to_string(redis->port())) << line;
    EXPECT_GT(j["offset_ms"].get<std::int64_t>(), -60'500) << line;
    EXPECT_LT(j["offset_ms"].get<std::int64_t>(), -59'500) << line;

    clock.set(0s);
    const auto near = local::run_process(cli({"inspect", "offset"}));
    EXPECT_EQ(near.err.find(event), std::string::npos) << "a server in step says nothing: " << near.err;
}

}  // namespace
}  // namespace fencelock::test_support
