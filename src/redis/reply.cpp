#include "redis/reply.hpp"

#include <string_view>

#include "fencelock/error.hpp"

namespace fencelock::detail {
namespace {

// The error code of a reply: its first word ("NOREPLICAS Not enough good replicas..."). An
// error that a command inside a script raised keeps its code in Redis 7 ("NOREPLICAS ...
// script: f, on @user_script:12."); Redis 6 wraps it ("ERR Error running script (call to
// f_...): @user_script:12: -NOREPLICAS ..."), so the code after that last '-' counts too.
std::string_view code_of(std::string_view m) {
    std::string_view code = m.substr(0, m.find(' '));
    if (code == "ERR" && m.find("Error running script") != std::string_view::npos) {
        if (const std::size_t dash = m.rfind(": -"); dash != std::string_view::npos) {
            const std::string_view inner = m.substr(dash + 3);
            return inner.substr(0, inner.find(' '));
        }
    }
    return code;
}

// A command inside a script refused by the user's ACL: Redis 7.0 says "The user executing the
// script can't run this command or subcommand", 7.2 "ACL failure in script", neither NOPERM.
bool refused_in_script(std::string_view m) {
    return m.find("user executing the script can't") != std::string_view::npos ||
           m.find("ACL failure in script") != std::string_view::npos;
}

}  // namespace

std::error_code error_from_reply(const std::string& message) {
    const std::error_code code = classify_reply(message);
    // The code is what callers act on; the server's words are kept for people (error_detail),
    // with the finer cause of an ACL or AUTH refusal (error_cause).
    remember_error_detail(code, reply_detail(message), std::string(reply_cause(message)));
    return code;
}

std::string_view reply_cause(const std::string& message) {
    const std::string_view c = code_of(message);
    if (refused_in_script(message)) return "noperm";
    if (c == "MOVED" || c == "ASK") return "cluster_node";
    if (c == "READONLY") return "read_only_replica";
    return c == "NOPERM" ? "noperm" : c == "NOAUTH" ? "auth_required" : c == "WRONGPASS" ? "auth_rejected" : "";
}

// A newcomer's first URL often names a node of a cluster or a replica: the reply alone ("MOVED
// 1234 10.0.0.2:7000", "READONLY You can't write against a read only replica.") does not say
// what to change.
std::string reply_detail(const std::string& message) {
    const std::string_view cause = reply_cause(message);
    if (cause == "cluster_node")
        return message +
               " (the server is a Redis Cluster node, whose keys live on several masters: "
               "use a redis-cluster:// URL)";
    if (cause == "read_only_replica")
        return message +
               " (the server is a read-only replica: use the master's address, or a "
               "redis-sentinel:// URL to follow whichever server is master)";
    return message;
}

std::error_code classify_reply(const std::string& message) {
    const std::string_view m = message;
    auto has = [&](std::string_view s) { return m.find(s) != std::string_view::npos; };
    // Compare the whole error code: BUSYKEY and BUSYGROUP are not BUSY. These come first, so a
    // replication refusal inside a script is never taken for a script failing on our keys.
    const std::string_view code = code_of(m);
    if (code == "READONLY" || code == "MASTERDOWN") return errc::not_master;
    if (code == "NOREPLICAS") return errc::replicas_unavailable;
    for (std::string_view busy : {"LOADING", "BUSY", "TRYAGAIN", "CLUSTERDOWN", "OOM"})
        if (code == busy) return errc::server_busy;
    // Redis 7 answers an unauthenticated command with more than 10 arguments (acquire has 11)
    // with "ERR Protocol error: unauthenticated multibulk length" instead of NOAUTH.
    if (m.starts_with("NOAUTH") || m.starts_with("WRONGPASS") || m.starts_with("NOPERM") || has("invalid password") ||
        has("invalid username-password") || has("unauthenticated") || refused_in_script(m))
        return errc::auth_failed;
    // A script refused an argument before writing anything: the client sent what it should
    // have refused itself (its options are validated against the same bounds).
    if (has("ERR fencelock: argument")) return errc::protocol_error;
    // lib/fence.lua: a counter at 2^53 - 1 has no next fence (not damage: a used-up resource).
    if (has("ERR fencelock: fence counter") && has("is exhausted")) return errc::fence_exhausted;
    // A script that failed on our own keys: a wrong type, a counter that is not an integer,
    // an exhausted counter, or a lease hash with missing fields. The scripts write nothing
    // before these can fail.
    if (has("WRONGTYPE") || has("not an integer") || has("user_script") || has("Error running script"))
        return errc::corrupt_key;
    return errc::protocol_error;
}

bool asks_for_another_server(const Reply& reply) {
    if (reply.kind == Reply::Kind::array) {
        for (const Reply& element : reply.elements)  // EXEC's replies
            if (asks_for_another_server(element)) return true;
        return false;
    }
    if (reply.kind != Reply::Kind::error) return false;
    const std::string_view code = code_of(reply.str);
    return code == "READONLY" || code == "MASTERDOWN" || code == "LOADING";
}

}  // namespace fencelock::detail
