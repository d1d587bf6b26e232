// Redis over TLS and over a Unix socket, through the library against real servers: a lock
// round trip with verification on (a client certificate where the server requires one, none
// where it is optional), tls_server_name and tls_insecure, an ACL user over TLS; and every
// way a TLS connection fails is errc::unavailable with its own error_cause and a detail that
// starts with the server ("127.0.0.1:PORT: "), fails within the connect timeout, and writes
// nothing (the keyspace, read over TLS, is unchanged). Certificates come from
// local::shared_tls_files(), made once per process.
//
// Endpoints are built as structs, not parsed from rediss:// URLs: these tests check the
// transport, the URL syntax has its own (tests/unit/redis_url_test.cpp).
#include <chrono>
#include <string>

#include "fencelock/client.hpp"
#include "fencelock/error.hpp"
#include "integration/lock_fixture.hpp"
#include "local_servers/process_io.hpp"
#include "local_servers/redis_server.hpp"
#include "local_servers/silent_server.hpp"
#include "local_servers/tls_files.hpp"

namespace fencelock::test_support {
namespace {

using namespace std::chrono_literals;
using local::RedisServer;
using local::RedisServerOptions;
using local::RedisTlsOptions;
using local::TlsClientAuth;

// Long enough for a loopback TLS handshake on a loaded machine, short enough that a case that
// can only end by timing out (a silent server) ends quickly.
constexpr auto connect_timeout = 500ms;
// Every failure must come within the connect timeout; the margin is for a slow machine.
constexpr auto failure_bound = connect_timeout + 1500ms;

class TlsTest : public ::testing::Test {
protected:
    const local::TlsFiles& files = local::shared_tls_files();

    /// A TLS server presenting `cert`/`key`, trusting the test CA for client certificates.
    /// redis-cli (cli(), snapshot()) presents the client certificate and verifies the server
    /// unless `cli_verifies` is false.
    static RedisTlsOptions server_tls(const local::TlsFiles& f, const std::string& cert, const std::string& key,
                                      TlsClientAuth auth, bool cli_verifies = true) {
        return RedisTlsOptions{.cert_file = cert,
                               .key_file = key,
                               .ca_cert_file = f.ca_cert,
                               .client_auth = auth,
                               .cli_cert_file = f.client_cert,
                               .cli_key_file = f.client_key,
                               .cli_verifies = cli_verifies};
    }
    std::unique_ptr<RedisServer> tls_server(TlsClientAuth auth) {
        return std::make_unique<RedisServer>(
            RedisServerOptions{.tls = server_tls(files, files.server_cert, files.server_key, auth)});
    }

    /// TLS to 127.0.0.1:port, verifying against the test CA, no client certificate.
    RedisEndpoint tls_endpoint(std::uint16_t port) const {
        RedisEndpoint e;
        e.host = "127.0.0.1";
        e.port = port;
        e.tls.enabled = true;
        e.tls.ca_file = files.ca_cert;
        return e;
    }
    RedisEndpoint with_client_cert(RedisEndpoint e) const {
        e.tls.cert_file = files.client_cert;
        e.tls.key_file = files.client_key;
        return e;
    }

    static LockClient client_for(const RedisEndpoint& endpoint) {
        auto c = LockClient::create(ClientOptions{.endpoint = endpoint, .connect_timeout = connect_timeout});
        EXPECT_TRUE(c.has_value()) << (c ? "" : c.error().message);
        return std::move(*c);
    }

    /// Acquire and release order:1 through `endpoint`; `server` shows the lease while it is
    /// held, and the fence it issued (above the 41 the test stored).
    static void expect_round_trip(const RedisEndpoint& endpoint, RedisServer& server) {
        server.cli({"SET", "fence:{order:1}", "41"});
        auto c = client_for(endpoint);
        auto got = c.try_acquire(resource("order:1"), {.lease = 10s});
        ASSERT_TRUE(got) << got.error().message() << ": " << error_detail(got.error());
        ASSERT_TRUE(got->acquired());
        EXPECT_GT(got->lease->fence, FencingToken(41));
        EXPECT_EQ(server.cli({"EXISTS", "lock:{order:1}"}), "1");
        auto released = c.release(resource("order:1"), got->lease->owner);
        ASSERT_TRUE(released) << released.error().message() << ": " << error_detail(released.error());
        EXPECT_EQ(*released, ReleaseStatus::released);
        EXPECT_EQ(server.cli({"EXISTS", "lock:{order:1}"}), "0");
        EXPECT_EQ(server.cli({"GET", "fence:{order:1}"}), std::to_string(got->lease->fence.value()));
    }

    struct Failure {
        std::error_code code;
        std::string detail, cause;
        std::chrono::steady_clock::duration took{};
    };
    static Failure failed_acquire(const RedisEndpoint& endpoint) {
        auto c = client_for(endpoint);
        const auto start = std::chrono::steady_clock::now();
        auto r = c.try_acquire(resource("order:1"), {.lease = 5s});
        const auto took = std::chrono::steady_clock::now() - start;
        EXPECT_FALSE(r) << "acquired at " << endpoint.host << ":" << endpoint.port << endpoint.unix_path;
        if (r) return {};
        return {r.error(), error_detail(r.error()), error_cause(r.error()), took};
    }

    /// One acquisition through `endpoint` fails fast with errc::unavailable, `cause`, and a
    /// detail naming 127.0.0.1:port first.
    static void expect_unavailable(const RedisEndpoint& endpoint, const std::string& cause) {
        const std::string at = "127.0.0.1:" + std::to_string(endpoint.port);
        const auto f = failed_acquire(endpoint);
        EXPECT_EQ(f.code, errc::unavailable) << f.code.message();
        EXPECT_EQ(f.cause, cause) << f.detail;
        EXPECT_TRUE(f.detail.starts_with(at + ": ")) << f.detail;
        EXPECT_LT(f.took, failure_bound);
    }

    /// expect_unavailable(), and `server`'s keyspace (a fence the test stores, read over TLS
    /// when the server has it) is what it was before.
    static void expect_unavailable_unchanged(const RedisEndpoint& endpoint, const std::string& cause,
                                             const RedisServer& server) {
        server.cli({"SET", "fence:{order:1}", "41"});
        const std::string before = server.snapshot();
        ASSERT_FALSE(before.empty());
        expect_unavailable(endpoint, cause);
        EXPECT_EQ(server.snapshot(), before);
    }
};

// ---- The fixture itself: nothing of the library, so these pass before the transport does.

TEST_F(TlsTest, EachCertificateVerifiesOrFailsAsItsNameSays) {
    auto verify = [](const std::string& ca, const std::string& cert, const std::vector<std::string>& more = {}) {
        std::vector<std::string> argv{"openssl", "verify", "-CAfile", ca};
        argv.insert(argv.end(), more.begin(), more.end());
        argv.push_back(cert);
        return local::detail::capture(argv);
    };
    EXPECT_EQ(verify(files.ca_cert, files.server_cert, {"-verify_ip", "127.0.0.1"}), files.server_cert + ": OK");
    EXPECT_EQ(verify(files.ca_cert, files.server_cert, {"-verify_hostname", "localhost"}), files.server_cert + ": OK");
    EXPECT_EQ(verify(files.ca_cert, files.client_cert, {"-purpose", "sslclient"}), files.client_cert + ": OK");
    EXPECT_EQ(verify(files.ca_cert, files.wrong_host_cert, {"-verify_hostname", "wrong.example"}),
              files.wrong_host_cert + ": OK");
    EXPECT_NE(verify(files.ca_cert, files.wrong_host_cert, {"-verify_ip", "127.0.0.1"}).find("IP address mismatch"),
              std::string::npos);
    EXPECT_NE(verify(files.ca_cert, files.expired_cert).find("certificate has expired"), std::string::npos);
    EXPECT_EQ(verify(files.ca_cert, files.expired_cert, {"-no_check_time", "-verify_ip", "127.0.0.1"}),
              files.expired_cert + ": OK");  // expired, and nothing else wrong with it
    EXPECT_NE(verify(files.other_ca_cert, files.server_cert).find("unable to get local issuer certificate"),
              std::string::npos);
}

TEST_F(TlsTest, TheFixtureServerAnswersOverTlsOnlyAndOnItsUnixSocket) {
    RedisServer redis(RedisServerOptions{
        .tls = server_tls(files, files.server_cert, files.server_key, TlsClientAuth::required), .unix_socket = true});
    EXPECT_EQ(redis.port(), 0);
    ASSERT_NE(redis.tls_port(), 0);
    EXPECT_EQ(redis.cli({"PING"}), "PONG");  // over TLS, with the client certificate
    EXPECT_EQ(redis.cli({"CONFIG", "GET", "tls-auth-clients"}), "tls-auth-clients\nyes");
    redis.cli({"SET", "k", "v"});
    EXPECT_NE(redis.snapshot().find("k string"), std::string::npos);
    // Plaintext to the TLS port: Redis closes the connection.
    EXPECT_NE(local::detail::capture({"redis-cli", "-p", std::to_string(redis.tls_port()), "PING"}), "PONG");
    // TLS without a client certificate: refused.
    EXPECT_NE(local::detail::capture(
                  {"redis-cli", "-p", std::to_string(redis.tls_port()), "--tls", "--cacert", files.ca_cert, "PING"}),
              "PONG");
    EXPECT_EQ(local::detail::capture({"redis-cli", "-s", redis.unix_path(), "GET", "k"}), "v");
    redis.kill();
    redis.start();  // the same ports and files again
    EXPECT_EQ(redis.cli({"PING"}), "PONG");
}

TEST_F(TlsTest, TheFixtureServesAclUsersAndAPlaintextPortNextToTls) {
    RedisServer redis(RedisServerOptions{.tls =
                                             [&] {
                                                 auto t = server_tls(files, files.server_cert, files.server_key,
                                                                     TlsClientAuth::optional);
                                                 t.plaintext_port = true;
                                                 return t;
                                             }(),
                                         .acl_users = {"locker on >locker-pw ~* &* +@all -@admin"}});
    ASSERT_NE(redis.port(), 0);
    EXPECT_EQ(local::detail::capture({"redis-cli", "-p", std::to_string(redis.port()), "PING"}), "PONG");
    EXPECT_EQ(redis.cli({"ACL", "WHOAMI"}), "default");
    EXPECT_NE(redis.cli({"--user", "locker", "-a", "locker-pw", "CONFIG", "GET", "port"}).find("NOPERM"),
              std::string::npos);
}

TEST_F(TlsTest, TheSilentServerAcceptsAndNeverAnswers) {
    local::SilentServer silent;
    const std::string pong =
        local::detail::capture({"timeout", "1", "redis-cli", "-p", std::to_string(silent.port()), "PING"});
    EXPECT_TRUE(pong.empty()) << pong;  // killed by timeout, having read nothing
    EXPECT_EQ(silent.accepted(), 1u);
}

// ---- Through the library.

TEST_F(TlsTest, ALockRoundTripWithAClientCertificateTheServerRequires) {
    auto redis = tls_server(TlsClientAuth::required);
    expect_round_trip(with_client_cert(tls_endpoint(redis->tls_port())), *redis);
}

TEST_F(TlsTest, ALockRoundTripWithoutAClientCertificateWhereItIsOptional) {
    auto redis = tls_server(TlsClientAuth::optional);
    expect_round_trip(tls_endpoint(redis->tls_port()), *redis);
}

TEST_F(TlsTest, AnAclUserOverTlsHoldsTheLockAsItself) {
    RedisServer redis(
        RedisServerOptions{.tls = server_tls(files, files.server_cert, files.server_key, TlsClientAuth::optional),
                           .acl_users = {"locker on >locker-pw ~* &* +@all -@admin"}});
    auto endpoint = tls_endpoint(redis.tls_port());
    endpoint.user = "locker";
    endpoint.password = "locker-pw";
    auto c = client_for(endpoint);
    auto got = c.try_acquire(resource("order:1"), {.lease = 10s});
    ASSERT_TRUE(got) << got.error().message() << ": " << error_detail(got.error());
    ASSERT_TRUE(got->acquired());
    EXPECT_NE(redis.cli({"CLIENT", "LIST"}).find("user=locker"), std::string::npos);
    auto released = c.release(resource("order:1"), got->lease->owner);
    ASSERT_TRUE(released);
    EXPECT_EQ(*released, ReleaseStatus::released);
}

TEST_F(TlsTest, AServerCertificateFromAnotherCaIsAnUnknownCa) {
    auto redis = tls_server(TlsClientAuth::optional);
    auto endpoint = tls_endpoint(redis->tls_port());
    endpoint.tls.ca_file = files.other_ca_cert;
    expect_unavailable_unchanged(endpoint, "tls_unknown_ca", *redis);
}

TEST_F(TlsTest, AnExpiredServerCertificateIsRefused) {
    RedisServer redis(RedisServerOptions{.tls = server_tls(files, files.expired_cert, files.expired_key,
                                                           TlsClientAuth::optional, /*cli_verifies=*/false)});
    expect_unavailable_unchanged(tls_endpoint(redis.tls_port()), "tls_cert_expired", redis);
}

TEST_F(TlsTest, ACertificateForAnotherHostIsAHostnameMismatch) {
    RedisServer redis(RedisServerOptions{
        .tls = server_tls(files, files.wrong_host_cert, files.wrong_host_key, TlsClientAuth::optional)});
    expect_unavailable_unchanged(tls_endpoint(redis.tls_port()), "tls_hostname_mismatch", redis);
}

TEST_F(TlsTest, TheServerNameToVerifyCanBeGivenApartFromTheHost) {
    RedisServer redis(RedisServerOptions{
        .tls = server_tls(files, files.wrong_host_cert, files.wrong_host_key, TlsClientAuth::optional)});
    auto endpoint = tls_endpoint(redis.tls_port());
    endpoint.tls.server_name = "wrong.example";
    expect_round_trip(endpoint, redis);
}

TEST_F(TlsTest, InsecureConnectsToAServerWhoseCertificateWouldNotVerify) {
    RedisServer redis(RedisServerOptions{
        .tls = server_tls(files, files.wrong_host_cert, files.wrong_host_key, TlsClientAuth::optional)});
    auto endpoint = tls_endpoint(redis.tls_port());
    endpoint.tls.ca_file.clear();  // nothing to verify with: insecure verifies nothing
    endpoint.tls.insecure = true;
    expect_round_trip(endpoint, redis);
}

TEST_F(TlsTest, NoClientCertificateWhereTheServerRequiresOneIsToldApart) {
    auto redis = tls_server(TlsClientAuth::required);
    expect_unavailable_unchanged(tls_endpoint(redis->tls_port()), "tls_client_cert_required", *redis);
}

TEST_F(TlsTest, PlaintextToATlsPortIsClosedUnanswered) {
    auto redis = tls_server(TlsClientAuth::optional);
    RedisEndpoint endpoint;
    endpoint.port = redis->tls_port();
    expect_unavailable_unchanged(endpoint, "handshake_closed", *redis);
}

TEST_F(TlsTest, TlsToAPlaintextPortIsToldApart) {
    RedisServer redis(RedisServerOptions{.tls = [&] {
        auto t = server_tls(files, files.server_cert, files.server_key, TlsClientAuth::optional);
        t.plaintext_port = true;
        return t;
    }()});
    // Redis reads the ClientHello as an inline command: it answers with an error (which is no
    // TLS record) only when the hello's random bytes happen to hold a '\n', and otherwise waits
    // for the line's end. Either way the detail says where to look.
    redis.cli({"SET", "fence:{order:1}", "41"});
    const std::string before = redis.snapshot();
    const auto endpoint = tls_endpoint(redis.port());
    const auto f = failed_acquire(endpoint);
    EXPECT_EQ(f.code, errc::unavailable) << f.code.message();
    EXPECT_TRUE(f.cause == "tls_to_plaintext_port" || f.cause == "handshake_timeout") << f.cause << ": " << f.detail;
    EXPECT_TRUE(f.detail.starts_with("127.0.0.1:" + std::to_string(redis.port()) + ": ")) << f.detail;
    EXPECT_NE(f.detail.find("plaintext port"), std::string::npos) << f.detail;
    EXPECT_EQ(redis.snapshot(), before);
}

TEST_F(TlsTest, AServerThatNeverAnswersTheTlsHandshakeIsAHandshakeTimeout) {
    local::SilentServer silent;
    expect_unavailable(tls_endpoint(silent.port()), "handshake_timeout");
    EXPECT_GE(silent.accepted(), 1u);  // TCP was accepted: not a connect timeout
}

TEST_F(TlsTest, ALockRoundTripOverAUnixSocket) {
    RedisServer redis(RedisServerOptions{.unix_socket = true});
    RedisEndpoint endpoint;
    endpoint.unix_path = redis.unix_path();
    expect_round_trip(endpoint, redis);
}

TEST_F(TlsTest, AMissingUnixSocketIsUnavailableAndNamesThePath) {
    RedisServer redis(RedisServerOptions{.unix_socket = true});
    RedisEndpoint endpoint;
    endpoint.unix_path = redis.unix_path() + ".missing";
    const auto f = failed_acquire(endpoint);
    EXPECT_EQ(f.code, errc::unavailable) << f.code.message();
    EXPECT_TRUE(f.detail.starts_with(endpoint.unix_path + ": ")) << f.detail;
    EXPECT_LT(f.took, failure_bound);
}

}  // namespace
}  // namespace fencelock::test_support
