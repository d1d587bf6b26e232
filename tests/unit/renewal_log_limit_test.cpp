// Failed renewals are logged once per lease per change of outcome, not once per retry (the
// keeper retries about every 100 ms while Redis fails over); the metrics still count every
// renewal. The limiter alone, then inside JsonLogObserver next to PrometheusMetrics. No servers.
#include <gtest/gtest.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>
#include <nlohmann/json.hpp>

#include "fencelock/error.hpp"
#include "fencelock/logging.hpp"
#include "fencelock/metrics.hpp"
#include "obs/renewal_log_limit.hpp"
#include "support/scrape.hpp"

namespace fencelock::test_support {
namespace {

using Limit = detail::RenewalLogLimit;

TEST(RenewalLogLimit, FirstFailureOfAKindLogsRepeatsDoNotRecoveryLogsOnce) {
    Limit limit;
    EXPECT_TRUE(limit.note("a", "renewed").log);  // healthy renewals are not limited (debug lines)
    EXPECT_EQ(limit.failing(), 0u);
    EXPECT_TRUE(limit.note("a", "error:redis:3").log);
    for (int i = 0; i < 49; ++i) EXPECT_FALSE(limit.note("a", "error:redis:3").log) << i;
    const auto other_kind = limit.note("a", "error:redis:7");
    EXPECT_TRUE(other_kind.log);
    EXPECT_EQ(other_kind.held_back, 49u);
    EXPECT_FALSE(other_kind.recovered);
    EXPECT_FALSE(limit.note("a", "error:redis:7").log);
    const auto back = limit.note("a", "renewed");
    EXPECT_TRUE(back.log);
    EXPECT_TRUE(back.recovered);
    EXPECT_EQ(back.held_back, 1u);
    EXPECT_EQ(limit.failing(), 0u);
    const auto next = limit.note("a", "renewed");
    EXPECT_FALSE(next.recovered) << "a recovery is logged once";
}

TEST(RenewalLogLimit, LeasesAreLimitedApartAndForgottenWhenTheyEnd) {
    Limit limit(2);
    EXPECT_TRUE(limit.note("a", "error:redis:3").log);
    EXPECT_TRUE(limit.note("b", "error:redis:3").log) << "another lease's first failure";
    EXPECT_FALSE(limit.note("b", "error:redis:3").log);
    limit.forget("b");
    EXPECT_TRUE(limit.note("b", "error:redis:3").log) << "a forgotten lease starts over";
    EXPECT_TRUE(limit.note("c", "error:redis:3").log);
    EXPECT_TRUE(limit.note("c", "error:redis:3").log) << "beyond max_failing nothing is held back";
    EXPECT_EQ(limit.failing(), 2u);
}

TEST(RenewalLogLimit, AFailoverLogsTwoLinesPerLeaseAndMetricsCountEveryRenewal) {
    std::vector<std::string> lines;
    auto log = std::make_shared<JsonLogObserver>(
        LogOptions{.level = LogLevel::warn, .sink = [&](std::string_view l) { lines.emplace_back(l); }});
    prometheus::Registry registry;
    auto metrics = std::make_shared<PrometheusMetrics>(registry);
    ObserverChain observers({metrics, log});
    const auto r1 = ResourceName::make("order:1").value();
    const auto r2 = ResourceName::make("order:2").value();
    const auto o1 = OwnerToken::generate(), o2 = OwnerToken::generate();
    const std::error_code down = make_error_code(errc::connection_lost);
    using Renewed = std::expected<RenewStatus, std::error_code>;
    const auto renew = [&](const ResourceName& r, const OwnerToken& o, Renewed result) {
        observers.on_renew({r, o, result, std::nullopt, std::chrono::milliseconds(30000), true});
    };
    for (int i = 0; i < 30; ++i) {  // 3 s of failover at the keeper's 100 ms retries
        renew(r1, o1, std::unexpected(down));
        renew(r2, o2, std::unexpected(down));
    }
    renew(r1, o1, RenewStatus::renewed);
    renew(r2, o2, RenewStatus::renewed);
    renew(r1, o1, RenewStatus::renewed);  // healthy again: debug, below the level

    ASSERT_EQ(lines.size(), 4u) << "one line per lease per change";
    const auto failed = nlohmann::json::parse(lines[0]);
    EXPECT_EQ(failed["level"], "warn");
    EXPECT_EQ(failed["result"], "error");
    EXPECT_FALSE(failed.contains("held_back"));
    const auto recovered = nlohmann::json::parse(lines[2]);
    EXPECT_EQ(recovered["level"], "warn");
    EXPECT_EQ(recovered["result"], "renewed");
    EXPECT_EQ(recovered["recovered"], true);
    EXPECT_EQ(recovered["held_back"], 29);

    const std::string text = "\n" + prometheus::TextSerializer().Serialize(registry.Collect());
    EXPECT_EQ(sample(text, "fencelock_lock_renew_total{result=\"error\"}"), 60);
    EXPECT_EQ(sample(text, "fencelock_redis_errors_total{source=\"keeper\"}"), 60);
    EXPECT_EQ(sample(text, "fencelock_lock_renew_total{result=\"renewed\"}"), 3);
}

TEST(RenewalLogLimit, ALostLeaseIsLoggedAndForgotten) {
    std::vector<std::string> lines;
    JsonLogObserver log(
        LogOptions{.level = LogLevel::warn, .sink = [&](std::string_view l) { lines.emplace_back(l); }});
    const auto r = ResourceName::make("order:1").value();
    const auto o = OwnerToken::generate();
    const std::error_code down = make_error_code(errc::connection_lost);
    for (int i = 0; i < 5; ++i)
        log.on_renew({r, o, std::unexpected(down), std::nullopt, std::chrono::milliseconds(30000), true});
    log.on_renew({r, o, RenewStatus::not_owner, std::nullopt, std::chrono::milliseconds(30000), true});
    log.on_lease_lost({r, o, FencingToken(3), LossReason::not_owner, std::chrono::microseconds(1000)});
    // The same owner and resource again (a new lease after the loss): its first failure logs.
    log.on_renew({r, o, std::unexpected(down), std::nullopt, std::chrono::milliseconds(30000), true});
    ASSERT_EQ(lines.size(), 4u);
    EXPECT_EQ(nlohmann::json::parse(lines[1])["result"], "not_owner");
    EXPECT_EQ(nlohmann::json::parse(lines[1])["held_back"], 4);
    EXPECT_EQ(nlohmann::json::parse(lines[2])["event"], "lock_lease_lost");
    EXPECT_EQ(nlohmann::json::parse(lines[3])["result"], "error");
}

}  // namespace
}  // namespace fencelock::test_support
