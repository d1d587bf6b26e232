#include "redis/handshake.hpp"

#include <charconv>
#include <mutex>
#include <set>

#include "common/log.hpp"
#include "fencelock/error.hpp"
#include "redis/info_text.hpp"

namespace fencelock::detail {

std::vector<HandshakeStep> handshake_steps(const RedisEndpoint& ep) { return handshake_steps(ep, HandshakeNeeds{}); }

std::vector<HandshakeStep> handshake_steps(const RedisEndpoint& ep, HandshakeNeeds needs) {
    std::vector<HandshakeStep> steps;
    if (!ep.password.empty()) {
        HandshakeStep auth{HandshakeStep::Kind::auth, {"AUTH"}};
        if (!ep.user.empty()) auth.argv.push_back(ep.user);
        auth.argv.push_back(ep.password);
        steps.push_back(std::move(auth));
    }
    if (ep.db != 0) steps.push_back({HandshakeStep::Kind::select, {"SELECT", std::to_string(ep.db)}});
    if (needs.confirm_master) steps.push_back({HandshakeStep::Kind::role, {"ROLE"}});
    if (!ep.allow_eviction) {
        steps.push_back({HandshakeStep::Kind::config_policy, {"CONFIG", "GET", "maxmemory-policy"}});
        steps.push_back({HandshakeStep::Kind::info_memory, {"INFO", "memory"}});
    }
    // With the handshake's round trip, not as one of its own: a connection that needs no
    // handshake (no password, evictions allowed) keeps serving at once.
    if (!steps.empty()) steps.push_back({HandshakeStep::Kind::clock, {"TIME"}});
    return steps;
}

std::optional<std::string> policy_in_config(const Reply& reply) {
    // ["maxmemory-policy", "<policy>"]; an ACL refusal or a renamed CONFIG is an error reply.
    if (reply.kind != Reply::Kind::array || reply.elements.size() != 2) return std::nullopt;
    if (reply.elements[1].kind != Reply::Kind::string || reply.elements[1].str.empty()) return std::nullopt;
    return reply.elements[1].str;
}

bool role_is_master(const Reply& reply) {
    return reply.kind == Reply::Kind::array && !reply.elements.empty() &&
           reply.elements[0].kind == Reply::Kind::string && reply.elements[0].str == "master";
}

std::optional<std::string> policy_in_info(const Reply& reply) {
    if (reply.kind != Reply::Kind::string) return std::nullopt;
    const auto policy = info_field(reply.str, "maxmemory_policy");
    return policy ? std::optional<std::string>(*policy) : std::nullopt;
}

namespace {

// Why AUTH failed, in words and as a cause (error_cause). Redis answers a wrong password and an
// unknown user alike (WRONGPASS), on purpose: fencelock cannot tell them apart either.
std::error_code auth_refused(const HandshakeStep& auth, const Reply& r) {
    const bool user = auth.argv.size() == 3;
    std::string text = "AUTH refused: ";
    if (r.str.starts_with("WRONGPASS"))
        text += user ? "a wrong password, or no ACL user named '" + auth.argv[1] + "' (Redis answers both alike)"
                     : "a wrong password for the default user";
    else if (r.str.find("without any password configured") != std::string::npos)
        text += "a password was given and the server has none (drop it from the URL)";
    else text += "the server said so";
    remember_error_detail(errc::auth_failed, text + ": " + r.str, "auth_rejected");
    return errc::auth_failed;
}

std::error_code password_missing(const Reply& r) {
    remember_error_detail(errc::auth_failed,
                          "the server requires a password and none was given (redis://user:password@host:port, "
                          "--redis-password-file or FENCELOCK_REDIS_PASSWORD): " +
                              r.str,
                          "auth_required");
    return errc::auth_failed;
}

}  // namespace

std::error_code judge_handshake(std::span<const HandshakeStep> steps, std::span<const Reply> replies) {
    std::optional<std::string> config_policy, info_policy;
    bool asked_policy = false;
    // A sentinel knows no CONFIG and answers INFO memory with nothing; a Redis server with
    // CONFIG renamed away still reports its memory.
    bool config_unknown = false, info_empty = false;
    for (std::size_t i = 0; i < steps.size() && i < replies.size(); ++i) {
        const Reply& r = replies[i];
        switch (steps[i].kind) {
            case HandshakeStep::Kind::auth:
                if (r.kind == Reply::Kind::error) return auth_refused(steps[i], r);
                break;
            case HandshakeStep::Kind::select:
                if (r.kind == Reply::Kind::error && r.str.starts_with("NOAUTH")) return password_missing(r);
                if (r.kind == Reply::Kind::error) return error_from_reply(r.str);
                break;
            case HandshakeStep::Kind::role:
                // An error (NOAUTH, an ACL refusing ROLE) says why; an answer other than master
                // (slave, sentinel) is a server to leave.
                if (r.kind == Reply::Kind::error && r.str.starts_with("NOAUTH")) return password_missing(r);
                if (r.kind == Reply::Kind::error) return error_from_reply(r.str);
                if (!role_is_master(r)) {
                    remember_error_detail(errc::not_master, "ROLE says it is not the master");
                    return errc::not_master;
                }
                break;
            case HandshakeStep::Kind::config_policy:
                // A server that wants a password answers NOAUTH to every step: report that, not
                // the policy. (NOPERM is an ACL refusing CONFIG: INFO then decides.)
                if (r.kind == Reply::Kind::error && r.str.starts_with("NOAUTH")) return password_missing(r);
                asked_policy = true;
                config_unknown = r.kind == Reply::Kind::error && r.str.find("unknown command") != std::string::npos;
                config_policy = policy_in_config(r);
                break;
            case HandshakeStep::Kind::info_memory:
                asked_policy = true;
                info_empty = r.kind == Reply::Kind::string && r.str.empty();
                info_policy = policy_in_info(r);
                break;
            case HandshakeStep::Kind::clock: break;  // only reported (clock_offset_in)
        }
    }
    if (replies.size() < steps.size()) {
        remember_error_detail(errc::protocol_error, "the handshake got fewer replies than it sent commands");
        return errc::protocol_error;
    }
    if (!asked_policy) return {};
    if (config_unknown && info_empty) return errc::is_sentinel;
    const auto policy = config_policy ? config_policy : info_policy;
    if (policy == "noeviction") return {};
    return eviction_refusal(policy);
}

std::optional<std::chrono::microseconds> clock_offset_in(std::span<const HandshakeStep> steps,
                                                         std::span<const Reply> replies,
                                                         std::chrono::system_clock::time_point received) {
    const auto number = [](const Reply& r, std::int64_t& out) {
        const auto [end, ec] = std::from_chars(r.str.data(), r.str.data() + r.str.size(), out);
        return ec == std::errc{} && end == r.str.data() + r.str.size();
    };
    for (std::size_t i = 0; i < steps.size() && i < replies.size(); ++i) {
        if (steps[i].kind != HandshakeStep::Kind::clock) continue;
        const Reply& r = replies[i];
        std::int64_t seconds = 0, micros = 0;
        if (r.kind != Reply::Kind::array || r.elements.size() != 2 || !number(r.elements[0], seconds) ||
            !number(r.elements[1], micros))
            return std::nullopt;
        return std::chrono::microseconds(seconds * 1'000'000 + micros) -
               std::chrono::duration_cast<std::chrono::microseconds>(received.time_since_epoch());
    }
    return std::nullopt;
}

void note_clock_offset(const std::string& server, std::optional<std::chrono::microseconds> offset) {
    if (!offset) return;
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(*offset).count();
    if (ms <= 1000 && ms >= -1000) return;
    static std::mutex mutex;
    static std::set<std::string> told;  // one line per server: reconnects would repeat it
    {
        std::lock_guard lock(mutex);
        if (!told.insert(server).second) return;
    }
    log_event("warn", "redis_clock_offset",
              {{"server", server},
               {"offset_ms", static_cast<std::int64_t>(ms)},
               {"hint",
                "this Redis server's wall clock is far from this host's: check that both follow NTP "
                "(fences across a failover follow the servers' clocks)"}});
}

}  // namespace fencelock::detail
