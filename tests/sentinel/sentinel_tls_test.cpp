// fencelock through rediss-sentinel:// against a Sentinel group that speaks TLS only: servers and
// sentinels on TLS ports with client certificates required, replication and the sentinels' own
// links over TLS (tls-replication yes), sentinels with a password of their own, the master
// holding ops/redis/fencelock.acl's users. One group for the whole test (a group takes seconds
// to agree): a lock round trip as fencelock-locks, a wrong CA refused at each sentinel with its
// cause and nothing written, then a failover the client follows over TLS, a replicated lease
// surviving it.
#include <gtest/gtest.h>

#include <string>

#include "fencelock/client.hpp"
#include "fencelock/error.hpp"
#include "local_servers/sentinel_group.hpp"
#include "local_servers/tls_files.hpp"
#include "support/eventually.hpp"
#include "support/shipped_acl.hpp"

namespace fencelock::test_support {
namespace {

using namespace std::chrono_literals;
using local::SentinelGroup;

ResourceName resource(const std::string& name) { return *ResourceName::make(name); }

TEST(SentinelTls, LocksGoThroughTlsSentinelsToTheMasterAndFollowAFailover) {
    const local::TlsFiles& f = local::shared_tls_files();
    SentinelGroup group({.tls = local::RedisTlsOptions{.cert_file = f.server_cert,
                                                       .key_file = f.server_key,
                                                       .ca_cert_file = f.ca_cert,
                                                       .client_auth = local::TlsClientAuth::required,
                                                       .cli_cert_file = f.client_cert,
                                                       .cli_key_file = f.client_key},
                         .server_acl_users = shipped_acl_lines(),
                         .sentinel_password = "sentinel-pw"});
    const auto url_with = [&](const std::string& ca) {
        std::string url = group.url("sentinel_password=sentinel-pw&failover_grace=0&tls_ca=" + ca +
                                    "&tls_cert=" + f.client_cert + "&tls_key=" + f.client_key);
        const auto hosts = url.find("://") + 3;
        return url.insert(hosts, locks_user + ":" + password_of(locks_user) + "@");
    };
    ASSERT_TRUE(url_with(f.ca_cert).starts_with("rediss-sentinel://fencelock-locks:"));
    auto client = LockClient::create({.endpoint = parse_redis_url(url_with(f.ca_cert)).value()}).value();
    const std::size_t first = group.master().value();

    {
        SCOPED_TRACE("a lock round trip as fencelock-locks, through TLS sentinels to the TLS master");
        auto got = client.try_acquire(resource("order:1"), {.lease = 10s});
        ASSERT_TRUE(got) << got.error().message() << ": " << error_detail(got.error());
        ASSERT_TRUE(got->acquired());
        EXPECT_EQ(group.server(first).cli({"HGET", "lock:{order:1}", "owner"}), got->lease->owner.str());
        auto released = client.release(resource("order:1"), got->lease->owner);
        ASSERT_TRUE(released);
        EXPECT_EQ(group.server(first).cli({"EXISTS", "lock:{order:1}"}), "0");
    }
    {
        SCOPED_TRACE("a CA that signed none of the sentinels' certificates: refused at each, nothing written");
        const std::string before = group.server(first).snapshot();
        auto stranger = LockClient::create({.endpoint = parse_redis_url(url_with(f.other_ca_cert)).value()}).value();
        auto got = stranger.try_acquire(resource("order:2"), {.lease = 10s});
        ASSERT_FALSE(got);
        EXPECT_EQ(got.error(), errc::unavailable);
        EXPECT_EQ(error_cause(got.error()), "tls_unknown_ca") << error_detail(got.error());
        for (std::size_t i = 0; i < group.sentinels(); ++i)
            EXPECT_NE(error_detail(got.error()).find("sentinel 127.0.0.1:" + std::to_string(group.sentinel(i).port())),
                      std::string::npos)
                << error_detail(got.error());
        EXPECT_EQ(group.server(first).snapshot(), before);
    }
    {
        SCOPED_TRACE("the master dies; the client follows the sentinels to the promoted replica over TLS");
        auto kept = client.try_acquire(resource("order:3"), {.lease = 60s});
        ASSERT_TRUE(kept && kept->acquired());
        // Replicated before the master dies, so the lease survives the promotion.
        ASSERT_EQ(group.server(first).cli({"WAIT", "1", "5000"}), "1");
        group.server(first).kill();
        const std::size_t promoted = group.wait_for_new_master(first);
        Result<Acquisition> next = std::unexpected(make_error_code(errc::unavailable));
        ASSERT_TRUE(eventually(
            [&] {
                next = client.try_acquire(resource("order:4"), {.lease = 10s});
                return next.has_value();
            },
            30s))
            << error_detail(next.error());
        ASSERT_TRUE(next->acquired());
        EXPECT_EQ(group.server(promoted).cli({"HGET", "lock:{order:4}", "owner"}), next->lease->owner.str());
        auto contended = client.try_acquire(resource("order:3"), {.lease = 10s});
        ASSERT_TRUE(contended);
        EXPECT_FALSE(contended->acquired()) << "the replicated lease was lost in the failover";
        EXPECT_EQ(group.server(promoted).cli({"HGET", "lock:{order:3}", "owner"}), kept->lease->owner.str());
    }
}

}  // namespace
}  // namespace fencelock::test_support
