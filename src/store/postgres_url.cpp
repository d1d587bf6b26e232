// postgresql:// URLs, parsed here rather than by libpq: libpq ends the user:password part at
// the FIRST '@', so the rest of a password holding '@' became the host name and appeared in
// libpq's messages. The parts go to libpq as keyword/value pairs (open_postgres).
#include "store/postgres_url.hpp"

#include <libpq-fe.h>

#include <charconv>
#include <set>

#include "common/url_text.hpp"

namespace fencelock::detail {
namespace {

constexpr auto npos = std::string_view::npos;

/// Messages never quote the URL or any part of it: it may carry a password.
std::unexpected<UrlError> fail(const std::string& why) {
    return std::unexpected(UrlError{"invalid PostgreSQL URL: " + why});
}

/// The keywords libpq knows: PQconninfoParse("") lists them all without reading the environment.
bool is_libpq_keyword(std::string_view keyword) {
    static const std::set<std::string, std::less<>> keywords = [] {
        std::set<std::string, std::less<>> out;
        char* err = nullptr;
        PQconninfoOption* options = PQconninfoParse("", &err);
        if (err != nullptr) PQfreemem(err);
        for (PQconninfoOption* o = options; o != nullptr && o->keyword != nullptr; ++o) out.emplace(o->keyword);
        PQconninfoFree(options);
        return out;
    }();
    return keywords.contains(keyword);
}

/// Percent-decodes one component; libpq takes C strings, so an encoded NUL is refused.
std::expected<std::string, UrlError> decode(std::string_view raw, const char* what) {
    std::string out;
    if (!percent_decode(raw, out)) return fail(std::string("bad percent-encoding in the ") + what);
    if (out.find('\0') != std::string::npos) return fail(std::string("%00 (NUL) in the ") + what);
    return out;
}

/// `host[:port]` entries separated by commas, IPv6 addresses in brackets. Adds `host` and
/// `port` (comma-separated lists, as libpq takes them) when any is given.
std::expected<void, UrlError> parse_hosts(std::string_view spec, DatabaseUrl& out) {
    std::string hosts, ports;
    bool any_host = false, any_port = false;
    for (std::size_t start = 0, n = 0;; ++n) {
        const std::size_t comma = spec.find(',', start);
        const std::string_view entry = spec.substr(start, comma == npos ? npos : comma - start);
        std::string_view host = entry, port;
        if (entry.starts_with('[')) {
            const std::size_t close = entry.find(']');
            if (close == npos) return fail("unterminated IPv6 address");
            host = entry.substr(1, close - 1);
            const std::string_view after = entry.substr(close + 1);
            if (!after.empty() && after.front() != ':') return fail("unexpected text after an IPv6 address");
            if (!after.empty()) port = after.substr(1);
        } else if (const std::size_t colon = entry.find(':'); colon != npos) {
            host = entry.substr(0, colon);
            port = entry.substr(colon + 1);
        }
        auto decoded = decode(host, "host");
        if (!decoded) return std::unexpected(decoded.error());
        if (!port.empty()) {
            unsigned value = 0;
            auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
            if (ec != std::errc() || end != port.data() + port.size() || value == 0 || value > 65535)
                return fail("port must be a number from 1 to 65535");
        }
        any_host = any_host || !decoded->empty();
        any_port = any_port || !port.empty();
        hosts += (n ? "," : "") + *decoded;
        ports += (n ? "," : "") + std::string(port);
        if (comma == npos) break;
        start = comma + 1;
    }
    if (any_host) out.settings.emplace_back("host", std::move(hosts));
    if (any_port) out.settings.emplace_back("port", std::move(ports));
    return {};
}

/// `keyword=value&...`: each keyword must be a libpq keyword. Appends the redacted query to `shown`.
std::expected<void, UrlError> parse_query(std::string_view query, DatabaseUrl& out, std::string& shown) {
    std::size_t index = 0;
    for (std::size_t start = 0; start <= query.size(); ++index) {
        const std::size_t amp = std::min(query.find('&', start), query.size());
        const std::string_view part = query.substr(start, amp - start);
        start = amp + 1;
        if (part.empty()) continue;
        const std::size_t eq = part.find('=');
        const std::string ordinal = std::to_string(index + 1);
        if (eq == npos) return fail("query parameter " + ordinal + " has no '='");
        auto keyword = decode(part.substr(0, eq), "query parameter name");
        auto value = decode(part.substr(eq + 1), "query parameter value");
        if (!keyword) return std::unexpected(keyword.error());
        if (!value) return std::unexpected(value.error());
        // Not quoted: a password with a raw '&' would put part of it here.
        if (!is_libpq_keyword(*keyword))
            return fail("query parameter " + ordinal + " is not a libpq connection keyword");
        shown += (shown.back() == '?' ? "" : "&") + std::string(part.substr(0, eq)) + "=" +
                 (is_secret_keyword(*keyword) ? std::string("***") : std::string(part.substr(eq + 1)));
        out.settings.emplace_back(std::move(*keyword), std::move(*value));
    }
    return {};
}

}  // namespace

bool is_secret_keyword(std::string_view keyword) noexcept { return keyword == "password" || keyword == "sslpassword"; }

std::expected<DatabaseUrl, UrlError> parse_postgres_url(std::string_view url, std::size_t scheme_size) {
    DatabaseUrl out{StoreBackend::postgresql, {}, {}};
    std::string shown(url.substr(0, scheme_size));
    const std::string_view rest = url.substr(scheme_size);
    const std::size_t host_end = std::min(rest.find_first_of("/?"), rest.size());
    // The user:password part ends at the LAST '@' before the host part ends, so a password
    // may hold '@' and ':'. An '@' further on means a '/' or '?' in the password ended the
    // host part early: refuse rather than send (and let libpq print) pieces of it.
    if (rest.find('@', host_end) != npos)
        return fail("'@' after the host part: in a password write '/' as %2F and '?' as %3F; elsewhere '@' as %40");
    std::string_view authority = rest.substr(0, host_end);
    if (const std::size_t at = authority.rfind('@'); at != npos) {
        const std::string_view userinfo = authority.substr(0, at);
        const std::size_t colon = userinfo.find(':');
        auto user = decode(userinfo.substr(0, colon), "user name");
        if (!user) return std::unexpected(user.error());
        if (!user->empty()) out.settings.emplace_back("user", std::move(*user));
        shown += userinfo.substr(0, colon);
        if (colon != npos) {
            auto password = decode(userinfo.substr(colon + 1), "password");
            if (!password) return std::unexpected(password.error());
            out.settings.emplace_back("password", std::move(*password));
            shown += ":***";
        }
        shown += "@";
        authority = authority.substr(at + 1);
    }
    if (auto hosts = parse_hosts(authority, out); !hosts) return std::unexpected(hosts.error());
    shown += authority;
    std::string_view path = rest.substr(host_end), query;
    if (const std::size_t q = path.find('?'); q != npos) {
        query = path.substr(q + 1);
        path = path.substr(0, q);
    }
    if (!path.empty()) {
        auto dbname = decode(path.substr(1), "database name");
        if (!dbname) return std::unexpected(dbname.error());
        if (!dbname->empty()) out.settings.emplace_back("dbname", std::move(*dbname));
        shown += path;
    }
    if (!query.empty()) {
        shown += "?";
        if (auto q = parse_query(query, out, shown); !q) return std::unexpected(q.error());
    }
    out.target = std::move(shown);
    return out;
}

}  // namespace fencelock::detail
