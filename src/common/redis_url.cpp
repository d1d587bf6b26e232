#include "fencelock/redis_url.hpp"

#include <charconv>
#include <optional>

#include "common/url_text.hpp"
#include "fencelock/duration.hpp"
#include "fencelock/limits.hpp"

namespace fencelock {
namespace {

// Messages below never quote the URL: it may carry a password.
using Problem = std::optional<std::string>;

constexpr std::string_view plain_scheme = "redis://";
constexpr std::string_view sentinel_scheme = "redis-sentinel://";
constexpr std::string_view cluster_scheme = "redis-cluster://";
constexpr std::uint16_t default_redis_port = 6379;
constexpr std::uint16_t default_sentinel_port = 26379;

template <typename Int>
bool parse_int(std::string_view s, Int& out) {
    if (s.empty()) return false;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc{} && end == s.data() + s.size();
}

// `host`, `host:port`, `[v6]` or `[v6]:port`.
Problem parse_host_port(std::string_view text, std::uint16_t default_port, HostAndPort& out) {
    std::string_view host = text, port;
    if (text.starts_with('[')) {
        std::size_t close = text.find(']');
        if (close == std::string_view::npos) return "unterminated IPv6 address";
        host = text.substr(1, close - 1);
        std::string_view after = text.substr(close + 1);
        if (!after.empty()) {
            if (after.front() != ':') return "unexpected text after IPv6 address";
            port = after.substr(1);
            if (port.empty()) return "empty port";
        }
    } else if (std::size_t colon = text.rfind(':'); colon != std::string_view::npos) {
        host = text.substr(0, colon);
        port = text.substr(colon + 1);
        if (port.empty()) return "empty port";
    }
    if (host.empty()) return "missing host";
    out.host = std::string(host);
    out.port = default_port;
    if (!port.empty()) {
        unsigned value = 0;
        if (!parse_int(port, value) || value == 0 || value > 65535) return "port must be a number from 1 to 65535";
        out.port = static_cast<std::uint16_t>(value);
    }
    return std::nullopt;
}

std::string show(const HostAndPort& at) {
    const bool v6 = at.host.find(':') != std::string::npos;
    return (v6 ? "[" + at.host + "]" : at.host) + ":" + std::to_string(at.port);
}

// `user:password` (user may be empty); the password is required.
Problem parse_credentials(std::string_view user_text, std::optional<std::string_view> password_text,
                          std::string& user, std::string& password) {
    if (!password_text) return "user given without a password (use user:password@)";
    if (!detail::percent_decode(user_text, user) || !detail::percent_decode(*password_text, password))
        return "bad percent-encoding in user or password";
    if (password.empty()) return "empty password";
    return std::nullopt;
}

// `host[:port][,host[:port]...]`: the sentinels or the cluster's seed nodes (`what` names
// them in messages). The endpoint's host and port become the first one's.
Problem parse_host_list(std::string_view authority, std::uint16_t default_port, std::string_view what,
                        std::vector<HostAndPort>& out, RedisEndpoint& ep) {
    for (std::size_t begin = 0;;) {
        const std::size_t comma = authority.find(',', begin);
        const std::string_view item = authority.substr(begin, comma == std::string_view::npos ? comma : comma - begin);
        if (item.empty()) return "empty host in the " + std::string(what) + " list";
        HostAndPort host;
        if (auto problem = parse_host_port(item, default_port, host)) return std::string(what) + ": " + *problem;
        out.push_back(std::move(host));
        if (comma == std::string_view::npos) break;
        begin = comma + 1;
    }
    ep.host = out.front().host;
    ep.port = out.front().port;
    return std::nullopt;
}

// `sentinel_user=U&sentinel_password=P` (percent-encoded) and `failover_grace=DURATION`;
// nothing else is accepted.
Problem parse_sentinel_query(std::string_view query, RedisEndpoint& ep) {
    if (query.empty()) return std::nullopt;
    std::optional<std::string_view> user, password, grace;
    for (std::size_t begin = 0;;) {
        const std::size_t amp = query.find('&', begin);
        const std::string_view pair = query.substr(begin, amp == std::string_view::npos ? amp : amp - begin);
        const std::size_t eq = pair.find('=');
        const std::string_view key = pair.substr(0, eq);
        const std::string_view value = eq == std::string_view::npos ? "" : pair.substr(eq + 1);
        if (key == "sentinel_user" && !user) user = value;
        else if (key == "sentinel_password" && !password) password = value;
        else if (key == "failover_grace" && !grace) grace = value;
        else
            return "unknown or repeated query parameter (only sentinel_user, sentinel_password and failover_grace "
                   "are accepted)";
        if (amp == std::string_view::npos) break;
        begin = amp + 1;
    }
    if (user || password)
        if (auto problem = parse_credentials(user.value_or(""), password, ep.sentinel_user, ep.sentinel_password))
            return "sentinel_user/sentinel_password: " + *problem;
    if (grace == "0") {
        ep.failover_grace = std::chrono::milliseconds::zero();
    } else if (grace) {
        const auto d = parse_duration(*grace);
        if (!d) return "failover_grace: " + d.error().message;
        if (*d > limits::lease) return "failover_grace: at most " + format_duration(limits::lease);
        ep.failover_grace = *d;
    }
    return std::nullopt;
}

}  // namespace

std::string RedisEndpoint::redacted() const {
    std::string url(uses_sentinel() ? sentinel_scheme : uses_cluster() ? cluster_scheme : plain_scheme);
    if (!user.empty() || !password.empty()) url += user + (password.empty() ? "" : ":***") + "@";
    if (uses_sentinel() || uses_cluster()) {
        const auto& hosts = uses_sentinel() ? sentinels : cluster_seeds;
        for (std::size_t i = 0; i < hosts.size(); ++i) url += (i ? "," : "") + show(hosts[i]);
    } else {
        url += show({host, port});
    }
    if (db != 0) url += "/" + std::to_string(db);
    if (!uses_sentinel()) return url;
    std::vector<std::string> query;
    if (!sentinel_user.empty() && !sentinel_password.empty())
        query.push_back("sentinel_user=" + detail::percent_encode(sentinel_user));
    if (!sentinel_password.empty()) query.push_back("sentinel_password=***");
    if (failover_grace != RedisEndpoint{}.failover_grace)
        query.push_back("failover_grace=" + (failover_grace.count() == 0 ? "0" : format_duration(failover_grace)));
    for (std::size_t i = 0; i < query.size(); ++i) url += (i ? "&" : "?") + query[i];
    return url + "#" + detail::percent_encode(master_name);
}

std::expected<RedisEndpoint, UrlError> parse_redis_url(std::string_view url) {
    auto fail = [](std::string why) { return std::unexpected(UrlError{"invalid Redis URL: " + why}); };
    if (url.starts_with("rediss://")) return fail("TLS (rediss://) is not supported");
    const bool sentinel = url.starts_with(sentinel_scheme);
    const bool cluster = url.starts_with(cluster_scheme);
    if (!sentinel && !cluster && !url.starts_with(plain_scheme))
        return fail("must start with redis://, redis-sentinel:// or redis-cluster://");
    std::string_view rest =
        url.substr(sentinel ? sentinel_scheme.size() : cluster ? cluster_scheme.size() : plain_scheme.size());

    RedisEndpoint ep;
    std::string_view query;
    if (sentinel) {
        // ...[/db][?query]#master-name: the fragment is last, the query before it.
        const std::size_t hash = rest.find('#');
        if (hash == std::string_view::npos)
            return fail("a redis-sentinel:// URL names its master group after '#' (...#mymaster)");
        if (!detail::percent_decode(rest.substr(hash + 1), ep.master_name))
            return fail("bad percent-encoding in the master name");
        if (ep.master_name.empty()) return fail("empty master name after '#'");
        rest = rest.substr(0, hash);
        if (const std::size_t q = rest.find('?'); q != std::string_view::npos) {
            query = rest.substr(q + 1);
            rest = rest.substr(0, q);
        }
    }
    if (rest.find_first_of("?#") != std::string_view::npos)
        return fail(sentinel ? "'?' or '#' twice (in a password write '?' as %3F, '#' as %23)"
                             : "query strings and fragments are not supported (in a password write '?' as %3F, "
                               "'#' as %23)");

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
        const auto password = colon == std::string_view::npos ? std::nullopt
                                                              : std::optional(userinfo.substr(colon + 1));
        if (auto problem = parse_credentials(userinfo.substr(0, colon), password, ep.user, ep.password))
            return fail(*problem);
    }

    if (sentinel) {
        if (authority.empty()) return fail("empty sentinel list (redis-sentinel://host:port[,host:port...]#name)");
        if (auto problem = parse_host_list(authority, default_sentinel_port, "sentinel", ep.sentinels, ep))
            return fail(*problem);
        if (auto problem = parse_sentinel_query(query, ep)) return fail(*problem);
    } else if (cluster) {
        if (authority.empty()) return fail("empty seed list (redis-cluster://host:port[,host:port...])");
        if (auto problem = parse_host_list(authority, default_redis_port, "seed node", ep.cluster_seeds, ep))
            return fail(*problem);
        if (!path.empty()) return fail("a Redis Cluster has only database 0: no /db in a redis-cluster:// URL");
    } else {
        HostAndPort server;
        if (auto problem = parse_host_port(authority, default_redis_port, server)) return fail(*problem);
        ep.host = std::move(server.host);
        ep.port = server.port;
    }
    if (!path.empty() && (!parse_int(path, ep.db) || ep.db < 0))
        return fail("database must be a non-negative number (/0, /1, ...)");
    return ep;
}

}  // namespace fencelock
