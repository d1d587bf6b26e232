#include "fencelock/redis_url.hpp"

#include <charconv>

#include "common/url_text.hpp"

namespace fencelock {
namespace {

template <typename Int>
bool parse_int(std::string_view s, Int& out) {
    if (s.empty()) return false;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc{} && end == s.data() + s.size();
}

}  // namespace

std::string RedisEndpoint::redacted() const {
    std::string url = "redis://";
    if (!user.empty() || !password.empty()) url += user + (password.empty() ? "" : ":***") + "@";
    bool v6 = host.find(':') != std::string::npos;
    url += (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
    if (db != 0) url += "/" + std::to_string(db);
    return url;
}

std::expected<RedisEndpoint, UrlError> parse_redis_url(std::string_view url) {
    // Messages below never quote the URL: it may carry a password.
    auto fail = [](std::string why) { return std::unexpected(UrlError{"invalid Redis URL: " + why}); };
    constexpr std::string_view scheme = "redis://";
    if (url.starts_with("rediss://")) return fail("TLS (rediss://) is not supported");
    if (!url.starts_with(scheme)) return fail("must start with redis://");
    std::string_view rest = url.substr(scheme.size());
    if (rest.find_first_of("?#") != std::string_view::npos)
        return fail("query strings and fragments are not supported (in a password write '?' as %3F, '#' as %23)");

    RedisEndpoint ep;
    std::size_t slash = rest.find('/');
    std::string_view authority = rest.substr(0, slash);
    std::string_view path = slash == std::string_view::npos ? "" : rest.substr(slash + 1);
    // The user:password part ends at the LAST '@' before the host, so a password may hold '@'
    // and ':'; an '@' after the host means a '/' in the password ended the host part early.
    if (path.find('@') != std::string_view::npos)
        return fail("'@' after the host: percent-encode '/' in a password as %2F");

    std::size_t at = authority.rfind('@');
    if (at != std::string_view::npos) {
        std::string_view userinfo = authority.substr(0, at);
        authority = authority.substr(at + 1);
        std::size_t colon = userinfo.find(':');
        if (colon == std::string_view::npos) return fail("user given without a password (use user:password@)");
        if (!detail::percent_decode(userinfo.substr(0, colon), ep.user) ||
            !detail::percent_decode(userinfo.substr(colon + 1), ep.password))
            return fail("bad percent-encoding in user or password");
        if (ep.password.empty()) return fail("empty password");
    }

    std::string_view host = authority, port;
    if (authority.starts_with('[')) {
        std::size_t close = authority.find(']');
        if (close == std::string_view::npos) return fail("unterminated IPv6 address");
        host = authority.substr(1, close - 1);
        std::string_view after = authority.substr(close + 1);
        if (!after.empty()) {
            if (after.front() != ':') return fail("unexpected text after IPv6 address");
            port = after.substr(1);
            if (port.empty()) return fail("empty port");
        }
    } else if (std::size_t colon = authority.rfind(':'); colon != std::string_view::npos) {
        host = authority.substr(0, colon);
        port = authority.substr(colon + 1);
        if (port.empty()) return fail("empty port");
    }
    if (host.empty()) return fail("missing host");
    ep.host = std::string(host);
    if (!port.empty()) {
        unsigned value = 0;
        if (!parse_int(port, value) || value == 0 || value > 65535)
            return fail("port must be a number from 1 to 65535");
        ep.port = static_cast<std::uint16_t>(value);
    }
    if (!path.empty() && (!parse_int(path, ep.db) || ep.db < 0))
        return fail("database must be a non-negative number (/0, /1, ...)");
    return ep;
}

}  // namespace fencelock
