// validate() accepts the defaults and names exactly the field that is wrong.
#include "fencelock/options.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <string>

namespace {

using namespace fencelock;
using namespace std::chrono_literals;

template <typename Options>
std::string bad_field(const Options& o) {
    const auto r = o.validate();
    if (r) return "<valid>";
    EXPECT_FALSE(r.error().message.empty()) << r.error().field;
    return r.error().field;
}

// Default options with one endpoint field changed (designated initializers of the nested
// RedisEndpoint would trip -Wmissing-field-initializers).
template <typename Change>
ClientOptions with_endpoint(Change change) {
    ClientOptions o;
    change(o.endpoint);
    return o;
}

TEST(Options, DefaultsAreValid) {
    EXPECT_TRUE(ClientOptions{}.validate().has_value());
    EXPECT_TRUE(AcquireOptions{}.validate().has_value());
    EXPECT_TRUE(BackoffPolicy{}.validate().has_value());
}

TEST(Options, DocumentedDefaults) {
    const ClientOptions c{};
    EXPECT_EQ(c.endpoint.host, "127.0.0.1");
    EXPECT_EQ(c.endpoint.port, 6379);
    EXPECT_EQ(c.connect_timeout, 1s);
    EXPECT_EQ(c.command_timeout, 1s);
    EXPECT_EQ(c.pool_size, 1u);
    EXPECT_DOUBLE_EQ(c.clock_drift_factor, 0.01);
    EXPECT_EQ(c.clock_probe_interval, 1s);
    const AcquireOptions a{};
    EXPECT_EQ(a.lease, 30s);
    EXPECT_EQ(a.max_hold, 1h);
    EXPECT_EQ(a.wait, 0ms);
    EXPECT_EQ(a.backoff.base, 10ms);
    EXPECT_EQ(a.backoff.max, 1s);
    EXPECT_EQ(a.replicas, 0u);
    EXPECT_EQ(a.replica_timeout, 200ms);
}

TEST(BackoffPolicyValidate, NamesTheField) {
    EXPECT_EQ(bad_field(BackoffPolicy{.base = 0ms}), "backoff.base");
    EXPECT_EQ(bad_field(BackoffPolicy{.base = -1ms}), "backoff.base");
    EXPECT_EQ(bad_field(BackoffPolicy{.base = 100ms, .max = 99ms}), "backoff.max");
    EXPECT_EQ(bad_field(BackoffPolicy{.base = 100ms, .max = 100ms}), "<valid>");
}

TEST(ClientOptionsValidate, NamesTheField) {
    EXPECT_EQ(bad_field(with_endpoint([](RedisEndpoint& e) { e.host = ""; })), "endpoint.host");
    EXPECT_EQ(bad_field(with_endpoint([](RedisEndpoint& e) { e.port = 0; })), "endpoint.port");
    EXPECT_EQ(bad_field(with_endpoint([](RedisEndpoint& e) { e.db = -1; })), "endpoint.db");
    EXPECT_EQ(bad_field(with_endpoint([](RedisEndpoint& e) { e.user = "app"; })), "endpoint.password");
    EXPECT_EQ(bad_field(ClientOptions{.key_prefix = "app{1}:"}), "key_prefix");
    EXPECT_EQ(bad_field(ClientOptions{.key_prefix = "app}"}), "key_prefix");
    EXPECT_EQ(bad_field(ClientOptions{.connect_timeout = 0ms}), "connect_timeout");
    EXPECT_EQ(bad_field(ClientOptions{.command_timeout = -5ms}), "command_timeout");
    EXPECT_EQ(bad_field(ClientOptions{.pool_size = 0}), "pool_size");
    EXPECT_EQ(bad_field(ClientOptions{.clock_drift_factor = -0.01}), "clock_drift_factor");
    EXPECT_EQ(bad_field(ClientOptions{.clock_drift_factor = 0.5}), "clock_drift_factor");
    EXPECT_EQ(bad_field(ClientOptions{.clock_drift_factor = std::nan("")}), "clock_drift_factor");
    EXPECT_EQ(bad_field(ClientOptions{.clock_probe_interval = 99ms}), "clock_probe_interval");
    EXPECT_EQ(bad_field(ClientOptions{.clock_probe_interval = 11min}), "clock_probe_interval");
    EXPECT_EQ(bad_field(ClientOptions{.clock_drift_factor = std::numeric_limits<double>::infinity()}),
              "clock_drift_factor");
}

TEST(ClientOptionsValidate, AcceptsValidVariants) {
    EXPECT_EQ(bad_field(with_endpoint([](RedisEndpoint& e) { e.password = "pw"; })), "<valid>");
    EXPECT_EQ(bad_field(with_endpoint([](RedisEndpoint& e) { e.user = "app", e.password = "pw"; })), "<valid>");
    EXPECT_EQ(bad_field(ClientOptions{.key_prefix = "app:"}), "<valid>");
    EXPECT_EQ(bad_field(ClientOptions{.pool_size = 1}), "<valid>");
    EXPECT_EQ(bad_field(ClientOptions{.clock_drift_factor = 0.0}), "<valid>");
    EXPECT_EQ(bad_field(ClientOptions{.clock_drift_factor = 0.49}), "<valid>");
}

TEST(AcquireOptionsValidate, NamesTheField) {
    EXPECT_EQ(bad_field(AcquireOptions{.lease = 9ms}), "lease");
    EXPECT_EQ(bad_field(AcquireOptions{.lease = 0ms}), "lease");
    EXPECT_EQ(bad_field(AcquireOptions{.lease = 2h}), "max_hold");  // default max_hold is 1h
    EXPECT_EQ(bad_field(AcquireOptions{.lease = 30s, .max_hold = 29s}), "max_hold");
    EXPECT_EQ(bad_field(AcquireOptions{.wait = -1ms}), "wait");
    EXPECT_EQ(bad_field(AcquireOptions{.backoff = {.base = 0ms}}), "backoff.base");
    EXPECT_EQ(bad_field(AcquireOptions{.backoff = {.base = 2s}}), "backoff.max");  // default max 1s
}

TEST(AcquireOptionsValidate, RefusesAbsurdReplicaAcknowledgement) {
    EXPECT_EQ(bad_field(AcquireOptions{.replicas = 101}), "replicas");
    EXPECT_EQ(bad_field(AcquireOptions{.replicas = 1, .replica_timeout = 0ms}), "replica_timeout");  // WAIT 0: forever
    EXPECT_EQ(bad_field(AcquireOptions{.replicas = 1, .replica_timeout = -5ms}), "replica_timeout");
    EXPECT_EQ(bad_field(AcquireOptions{.replicas = 1, .replica_timeout = 11min}), "replica_timeout");
    EXPECT_EQ(bad_field(AcquireOptions{.replicas = 100, .replica_timeout = 1ms}), "<valid>");
    EXPECT_EQ(bad_field(AcquireOptions{.replicas = 1, .replica_timeout = 10min}), "<valid>");
}

TEST(AcquireOptionsValidate, ReplicaTimeoutLeavesHalfTheCommandTimeoutForTheRoundTrip) {
    const AcquireOptions half{.replicas = 1, .replica_timeout = 500ms};
    EXPECT_TRUE(half.validate_for(1s).has_value());
    const auto over = AcquireOptions{.replicas = 1, .replica_timeout = 501ms}.validate_for(1s);
    ASSERT_FALSE(over.has_value());
    EXPECT_EQ(over.error().field, "replica_timeout");
    EXPECT_NE(over.error().message.find("command timeout"), std::string::npos);
    // Without replicas the timeout is unused, so it does not have to fit.
    EXPECT_TRUE(AcquireOptions{.replica_timeout = 900ms}.validate_for(1s).has_value());
    // validate_for() includes validate().
    EXPECT_EQ(AcquireOptions{.lease = 1ms}.validate_for(1s).error().field, "lease");
}

TEST(AcquireOptionsValidate, AcceptsBoundaries) {
    EXPECT_EQ(bad_field(AcquireOptions{.lease = 10ms, .max_hold = 10ms}), "<valid>");
    EXPECT_EQ(bad_field(AcquireOptions{.wait = 5s}), "<valid>");
}

}  // namespace
