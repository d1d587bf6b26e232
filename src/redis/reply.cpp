#include "redis/reply.hpp"

#include <string_view>

#include "fencelock/error.hpp"

namespace fencelock::detail {

std::error_code error_from_reply(const std::string& message) {
    const std::string_view m = message;
    auto has = [&](std::string_view s) { return m.find(s) != std::string_view::npos; };
    // Compare the whole error code (first word): BUSYKEY and BUSYGROUP are not BUSY.
    const std::string_view code = m.substr(0, m.find(' '));
    for (std::string_view busy : {"LOADING", "BUSY", "READONLY", "MASTERDOWN", "TRYAGAIN",
                                  "CLUSTERDOWN", "OOM"})
        if (code == busy) return errc::server_busy;
    // Redis 7 answers an unauthenticated command with more than 10 arguments (acquire has 11)
    // with "ERR Protocol error: unauthenticated multibulk length" instead of NOAUTH.
    if (m.starts_with("NOAUTH") || m.starts_with("WRONGPASS") || m.starts_with("NOPERM") ||
        has("invalid password") || has("invalid username-password") || has("unauthenticated"))
        return errc::auth_failed;
    // A script refused an argument before writing anything: the client sent what it should
    // have refused itself (its options are validated against the same bounds).
    if (has("ERR fencelock: argument")) return errc::protocol_error;
    // A script that failed on our own keys: a wrong type, a counter that is not an integer,
    // an exhausted counter, or a lease hash with missing fields. The scripts write nothing
    // before these can fail.
    if (has("WRONGTYPE") || has("not an integer") || has("user_script") || has("Error running script"))
        return errc::corrupt_key;
    return errc::protocol_error;
}

}  // namespace fencelock::detail
