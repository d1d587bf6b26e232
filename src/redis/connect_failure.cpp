#include "redis/connect_failure.hpp"

#include "fencelock/error.hpp"

namespace fencelock::detail {

std::string_view connect_cause(std::string_view e) {
    const auto has = [&](std::string_view s) { return e.find(s) != std::string_view::npos; };
    if (has("refused")) return "connection_refused";
    // A connect that did not finish in time: ETIMEDOUT's words, or the transport's own deadline.
    if (has("timed out")) return "connect_timeout";
    // getaddrinfo's words (hiredis: "Can't resolve: host", or gai_strerror's text).
    if (has("resolve") || has("not known") || has("name resolution") || has("No address associated"))
        return "name_resolution_failed";
    return {};
}

std::string server_name(const ServerAddress& server) {
    if (server.port == 0 && server.host.starts_with('/')) return server.host;
    const bool v6 = server.host.find(':') != std::string::npos;
    return (v6 ? "[" + server.host + "]" : server.host) + ":" + std::to_string(server.port);
}

namespace {
thread_local ThreadFailure last_failure;
}  // namespace

const ThreadFailure& this_threads_last_failure() noexcept { return last_failure; }

std::error_code failed_at(const ServerAddress& server, std::string_view words, std::string_view cause) {
    last_failure = {std::string(words), std::string(cause)};
    remember_error_detail(errc::unavailable, server_name(server) + ": " + std::string(words), std::string(cause));
    return errc::unavailable;
}

std::error_code lost_at(const ServerAddress& server, std::string_view words) { return failed_at(server, words, {}); }

std::error_code connect_failed(const ServerAddress& server, std::string_view errstr) {
    const std::string_view cause = connect_cause(errstr);
    std::string words = cause == "connection_refused" ? "connection refused (is redis-server running on that port?)"
                        : cause == "connect_timeout"  ? "connect timeout"
                        : cause == "name_resolution_failed" ? "name resolution failed"
                                                            : "could not connect";
    if (cause.empty() && !errstr.empty()) words += " (" + std::string(errstr) + ")";
    return failed_at(server, words, cause);
}

std::error_code handshake_timed_out(const ServerAddress& server) {
    return failed_at(server,
                     "connected, but no reply to the handshake within the connect timeout (a TLS port, a stalled "
                     "server, or not Redis?)",
                     "handshake_timeout");
}

std::error_code handshake_closed(const ServerAddress& server) {
    return failed_at(server,
                     "the server closed the connection before replying to the handshake (a TLS port spoken to "
                     "in plaintext?)",
                     "handshake_closed");
}

std::error_code handshake_ended(const ServerAddress& server, std::string_view words, std::string_view cause) {
    if (cause.empty() || cause == "handshake_closed") return handshake_closed(server);
    return failed_at(server, words, cause);
}

}  // namespace fencelock::detail
