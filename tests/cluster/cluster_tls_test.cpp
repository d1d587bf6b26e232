// fencelock through rediss-cluster:// against a Redis Cluster that speaks TLS only: every node on
// a TLS port with client certificates required, the bus and replication over TLS (tls-cluster,
// tls-replication), so the slot map announces TLS ports; the nodes hold ops/redis/fencelock.acl's
// users. One cluster for the whole test: locks on resources spread over every master as
// fencelock-locks, each key on the master its slot maps to, and a wrong CA refused with its
// cause, the node named and nothing written.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "fencelock/client.hpp"
#include "fencelock/error.hpp"
#include "local_servers/cluster_group.hpp"
#include "local_servers/tls_files.hpp"
#include "support/shipped_acl.hpp"

namespace fencelock::test_support {
namespace {

using namespace std::chrono_literals;
using local::ClusterGroup;

TEST(ClusterTls, LocksReachEveryMasterOverTlsAtTheAnnouncedPorts) {
    const local::TlsFiles& f = local::shared_tls_files();
    ClusterGroup cluster({.masters = 3,
                          .replicas_per_master = 0,
                          .tls = local::RedisTlsOptions{.cert_file = f.server_cert,
                                                        .key_file = f.server_key,
                                                        .ca_cert_file = f.ca_cert,
                                                        .client_auth = local::TlsClientAuth::required,
                                                        .cli_cert_file = f.client_cert,
                                                        .cli_key_file = f.client_key},
                          .server_acl_users = shipped_acl_lines()});
    for (std::size_t i = 0; i < cluster.servers(); ++i) ASSERT_EQ(cluster.server(i).port(), 0) << "TLS only";
    const auto url_with = [&](const std::string& ca) {
        std::string url = cluster.url() + "?tls_ca=" + ca + "&tls_cert=" + f.client_cert + "&tls_key=" + f.client_key;
        return url.insert(url.find("://") + 3, locks_user + ":" + password_of(locks_user) + "@");
    };
    auto client = LockClient::create({.endpoint = parse_redis_url(url_with(f.ca_cert)).value()}).value();

    {
        SCOPED_TRACE("resources on every master, each lock on the node its slot maps to");
        std::set<std::uint16_t> masters_used;
        for (int i = 0; i < 12; ++i) {
            const auto r = *ResourceName::make("order:" + std::to_string(i));
            auto got = client.try_acquire(r, {.lease = 10s});
            ASSERT_TRUE(got) << got.error().message() << ": " << error_detail(got.error());
            ASSERT_TRUE(got->acquired());
            const std::string key = "lock:{" + r.str() + "}";
            const auto slot = cluster.server(0).cli({"CLUSTER", "KEYSLOT", key});
            const auto owner = local::slot_master_port(cluster.ports()[0], static_cast<std::uint16_t>(std::stoi(slot)),
                                                       cluster.cli_flags());
            ASSERT_TRUE(owner);
            masters_used.insert(*owner);
            EXPECT_EQ(cluster.server(cluster.index_of(*owner)).cli({"HGET", key, "owner"}), got->lease->owner.str());
            auto released = client.release(r, got->lease->owner);
            ASSERT_TRUE(released);
            EXPECT_EQ(*released, ReleaseStatus::released);
        }
        EXPECT_EQ(masters_used.size(), 3u) << "twelve resources should spread over all three masters";
    }
    {
        SCOPED_TRACE("a CA that signed none of the nodes' certificates: refused, a node named, nothing written");
        std::vector<std::string> before;
        for (std::size_t i = 0; i < cluster.servers(); ++i) before.push_back(cluster.server(i).snapshot());
        auto stranger = LockClient::create({.endpoint = parse_redis_url(url_with(f.other_ca_cert)).value()}).value();
        auto got = stranger.try_acquire(*ResourceName::make("order:stranger"), {.lease = 10s});
        ASSERT_FALSE(got);
        EXPECT_EQ(got.error(), errc::unavailable);
        EXPECT_EQ(error_cause(got.error()), "tls_unknown_ca") << error_detail(got.error());
        EXPECT_NE(error_detail(got.error()).find("127.0.0.1:"), std::string::npos) << error_detail(got.error());
        for (std::size_t i = 0; i < cluster.servers(); ++i) EXPECT_EQ(cluster.server(i).snapshot(), before[i]);
    }
}

}  // namespace
}  // namespace fencelock::test_support
