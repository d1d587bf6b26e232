// Each way a TLS connection fails, through the CLI: `acquire` and `run` exit 4 with the cause's
// own JSON code and a detail naming 127.0.0.1:PORT, and the keyspace is unchanged. The
// library-level cases (tests/integration/tls_test.cpp) show the same causes come within the
// connect timeout; here a silent server ends as handshake_timeout, not as a hang.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "integration/lock_fixture.hpp"
#include "local_servers/child_process.hpp"
#include "local_servers/redis_server.hpp"
#include "local_servers/silent_server.hpp"
#include "local_servers/tls_files.hpp"

namespace fencelock::test_support {
namespace {

using local::RedisServer;
using local::RedisServerOptions;
using local::RedisTlsOptions;
using local::TlsClientAuth;
using nlohmann::json;

const local::TlsFiles& files() { return local::shared_tls_files(); }

RedisTlsOptions tls_presenting(const std::string& cert, const std::string& key, TlsClientAuth auth,
                               bool cli_verifies = true) {
    return RedisTlsOptions{.cert_file = cert,
                           .key_file = key,
                           .ca_cert_file = files().ca_cert,
                           .client_auth = auth,
                           .cli_cert_file = files().client_cert,
                           .cli_key_file = files().client_key,
                           .cli_verifies = cli_verifies};
}

/// A server set up to refuse, and the URL that reaches the refusing port.
struct Refusal {
    std::unique_ptr<RedisServer> server;  // null for the silent listener
    std::string url;
    std::uint16_t port = 0;
};

struct RefusalCase {
    const char* name;
    std::vector<std::string> codes;  // the cause's code; two where the server's reply is random
    std::function<Refusal()> make;
};

std::string verified(std::uint16_t port) {
    return "rediss://127.0.0.1:" + std::to_string(port) + "?tls_ca=" + files().ca_cert;
}

Refusal tls_server(RedisTlsOptions tls, bool over_tls = true) {
    auto server = std::make_unique<RedisServer>(RedisServerOptions{.tls = std::move(tls)});
    const std::uint16_t port = server->tls_port();
    server->cli({"SET", "fence:{order:1}", "41"});
    return {std::move(server), over_tls ? verified(port) : "redis://127.0.0.1:" + std::to_string(port), port};
}

const std::vector<RefusalCase>& refusal_cases() {
    static const std::vector<RefusalCase> cases{
        {"ExpiredCertificate",
         {"tls_cert_expired"},
         [] {
             return tls_server(tls_presenting(files().expired_cert, files().expired_key, TlsClientAuth::optional,
                                              /*cli_verifies=*/false));
         }},
        {"HostnameMismatch",
         {"tls_hostname_mismatch"},
         [] {
             return tls_server(
                 tls_presenting(files().wrong_host_cert, files().wrong_host_key, TlsClientAuth::optional));
         }},
        {"ClientCertificateRequired",
         {"tls_client_cert_required"},
         [] { return tls_server(tls_presenting(files().server_cert, files().server_key, TlsClientAuth::required)); }},
        {"PlaintextToTheTlsPort",
         {"handshake_closed"},
         [] {
             return tls_server(tls_presenting(files().server_cert, files().server_key, TlsClientAuth::optional),
                               /*over_tls=*/false);
         }},
        {"TlsToAPlaintextPort",
         {"tls_to_plaintext_port", "handshake_timeout"},
         [] {
             auto tls = tls_presenting(files().server_cert, files().server_key, TlsClientAuth::optional);
             tls.plaintext_port = true;
             auto server = std::make_unique<RedisServer>(RedisServerOptions{.tls = tls});
             const std::uint16_t port = server->port();
             server->cli({"SET", "fence:{order:1}", "41"});
             return Refusal{std::move(server), verified(port), port};
         }},
    };
    return cases;
}

json last_json_line(const std::string& text) {
    const auto end = text.find_last_not_of('\n');
    if (end == std::string::npos) return json{};
    const auto found = text.rfind('\n', end);
    const auto start = found == std::string::npos ? 0 : found + 1;
    return json::parse(text.substr(start, end + 1 - start), nullptr, false);
}

/// Exit 4, the JSON error (stdout for acquire, stderr for run) with one of `codes` and the port.
void expect_refused(const local::ProcessResult& r, const std::string& json_text, const std::vector<std::string>& codes,
                    std::uint16_t port) {
    EXPECT_EQ(r.exit_code, 4) << r.out << r.err;
    const json e = last_json_line(json_text);
    EXPECT_EQ(e.value("error", ""), "redis") << json_text;
    EXPECT_NE(std::find(codes.begin(), codes.end(), e.value("code", "")), codes.end()) << json_text;
    EXPECT_NE(e.value("detail", "").find("127.0.0.1:" + std::to_string(port) + ": "), std::string::npos) << json_text;
}

local::ProcessResult fencelock(const std::string& url, std::vector<std::string> args) {
    args.insert(args.begin(), {FENCELOCK_CLI, "--redis", url, "--timeout", "1s"});
    return local::run_process(args);
}

class TlsCliRefusalTest : public ::testing::TestWithParam<RefusalCase> {};

TEST_P(TlsCliRefusalTest, AcquireAndRunExitFourNamingTheCauseAndWriteNothing) {
    const Refusal refusal = GetParam().make();
    const std::string before = refusal.server->snapshot();
    const auto acquired = fencelock(refusal.url, {"acquire", "order:1", "--lease", "30s"});
    expect_refused(acquired, acquired.out, GetParam().codes, refusal.port);
    const auto ran = fencelock(refusal.url, {"run", "order:1", "--json", "--lease", "30s", "--", "echo", "ran"});
    expect_refused(ran, ran.err, GetParam().codes, refusal.port);
    EXPECT_EQ(ran.out, "");  // CMD never started
    EXPECT_EQ(refusal.server->snapshot(), before);
}

INSTANTIATE_TEST_SUITE_P(Causes, TlsCliRefusalTest, ::testing::ValuesIn(refusal_cases()),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(TlsCliSilentServer, AServerThatNeverAnswersTheHandshakeIsExitFourHandshakeTimeout) {
    local::SilentServer silent;
    const auto r = fencelock(verified(silent.port()), {"acquire", "order:1", "--lease", "30s"});
    expect_refused(r, r.out, {"handshake_timeout"}, silent.port());
    EXPECT_GE(silent.accepted(), 1u);  // TCP was accepted: the handshake is what timed out
}

}  // namespace
}  // namespace fencelock::test_support
