#pragma once
// The managed-Redis shape the tls.* ctest entries (FENCELOCK_TEST_TRANSPORT=tls) run suites
// against: TLS only with a client certificate required, the default user off, and the users of
// ops/redis/fencelock.acl loaded, clients connecting over rediss:// as one of them. A suite run
// so shows that the transport and the shipped ACL carry its whole contract: a permission the
// file lacks fails a test. The server's redis-cli stays all-powerful (a test-only user), so a
// test still reads and plants keys as it likes.
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "local_servers/redis_server.hpp"
#include "local_servers/tls_files.hpp"
#include "support/shipped_acl.hpp"

namespace fencelock::test_support {

inline bool tls_under_test() {
    const char* transport = std::getenv("FENCELOCK_TEST_TRANSPORT");
    return transport != nullptr && std::string_view(transport) == "tls";
}

/// The server: TLS on tls_port() only, the test CA's certificates.
inline local::RedisServerOptions managed_redis_options() {
    const local::TlsFiles& f = local::shared_tls_files();
    std::vector<std::string> users{"default off", "fencelock-test-root on >test-root-pw ~* &* +@all"};
    for (auto& line : shipped_acl_lines()) users.push_back(std::move(line));
    return {.tls = local::RedisTlsOptions{.cert_file = f.server_cert,
                                          .key_file = f.server_key,
                                          .ca_cert_file = f.ca_cert,
                                          .client_auth = local::TlsClientAuth::required,
                                          .cli_cert_file = f.client_cert,
                                          .cli_key_file = f.client_key},
            .acl_users = users,
            .cli_user = "fencelock-test-root",
            .cli_password = "test-root-pw"};
}

/// rediss:// to `server` as the shipped ACL's `user`, verifying against the test CA and
/// presenting the test client certificate.
inline std::string managed_redis_url(const local::RedisServer& server, const std::string& user) {
    const local::TlsFiles& f = local::shared_tls_files();
    return "rediss://" + user + ":" + password_of(user) + "@127.0.0.1:" + std::to_string(server.tls_port()) +
           "?tls_ca=" + f.ca_cert + "&tls_cert=" + f.client_cert + "&tls_key=" + f.client_key;
}

}  // namespace fencelock::test_support
