// The duration bounds exist twice, in C++ (fencelock::limits, checked by validate() before
// anything is sent) and in the scripts (checked again before anything is written). This keeps
// the two in step, and checks what the bounds are for.
#include <gtest/gtest.h>

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

#include "coordinator/redis/calls/acquire_call.hpp"
#include "coordinator/redis/scripts.hpp"
#include "fencelock/options.hpp"

namespace fencelock {
namespace {

using namespace std::chrono_literals;

std::int64_t lua_constant(std::string_view body, std::string_view name) {
    const std::string marker = "local " + std::string(name) + " = ";
    const auto at = body.find(marker);
    EXPECT_NE(at, std::string_view::npos) << name << " not in the script";
    if (at == std::string_view::npos) return -1;
    std::int64_t value = -1;
    const char* begin = body.data() + at + marker.size();
    std::from_chars(begin, body.data() + body.size(), value);
    return value;
}

TEST(Limits, ScriptsCheckTheSameBoundsAsValidate) {
    for (const auto* script : {&detail::scripts::acquire, &detail::scripts::renew}) {
        EXPECT_EQ(lua_constant(script->body, "MAX_LEASE_MS"), limits::lease.count()) << script->name;
        EXPECT_EQ(lua_constant(script->body, "MAX_HOLD_MS"), limits::max_hold.count()) << script->name;
    }
    // The longest place in a line a valid AcquireOptions can ask for.
    const AcquireOptions longest{.backoff = {.max = limits::backoff}};
    ASSERT_TRUE(longest.validate());
    EXPECT_EQ(lua_constant(detail::scripts::acquire.body, "MAX_SLOT_MS"), detail::waiter_slot(longest).count());
}

TEST(Limits, EveryDeadlineRedisComputesStaysExactAndPrintsWithoutAnExponent) {
    // Lua prints numbers with %.14g: anything below 1e14 comes out as digits. Redis TIME in ms
    // is about 1.8e12 today and stays below 1e13 until the year 2286.
    constexpr std::int64_t time_ms_bound = 10'000'000'000'000;
    EXPECT_LT(time_ms_bound + limits::max_hold.count() + limits::lease.count(), 100'000'000'000'000);
}

TEST(Limits, ValidateRefusesEachDurationPastItsBound) {
    EXPECT_FALSE((AcquireOptions{.lease = limits::lease + 1ms, .max_hold = limits::max_hold}.validate()));
    EXPECT_TRUE((AcquireOptions{.lease = limits::lease, .max_hold = limits::max_hold}.validate()));
    EXPECT_EQ((AcquireOptions{.max_hold = limits::max_hold + 1ms}.validate().error().field), "max_hold");
    EXPECT_EQ((AcquireOptions{.wait = limits::wait + 1ms}.validate().error().field), "wait");
    EXPECT_EQ((AcquireOptions{.backoff = {.max = limits::backoff + 1ms}}.validate().error().field), "backoff.max");
    EXPECT_EQ((ClientOptions{.command_timeout = limits::timeout + 1ms}.validate().error().field), "command_timeout");
    EXPECT_EQ((ClientOptions{.connect_timeout = limits::timeout + 1ms}.validate().error().field), "connect_timeout");
    EXPECT_FALSE(validate_lease(99999999h));
    EXPECT_FALSE(validate_lease(9ms));
    EXPECT_TRUE(validate_lease(10ms));
}

}  // namespace
}  // namespace fencelock
