#include "fencelock/redis_url.hpp"

#include <charconv>
#include <optional>

#include "common/url_text.hpp"
#include "fencelock/duration.hpp"
#include "fencelock/limits.hpp"

namespace fencelock {
namespace {

// Messages below never quote the URL, nor any part of it the parser did not recognise: it may
// carry a password. Known query keys may be named; their values may not.
using Problem = std::optional<std::string>;

constexpr std::uint16_t default_redis_port = 6379;
constexpr std::uint16_t default_sentinel_port = 26379;
// sockaddr_un::sun_path holds 108 bytes on Linux, the terminating NUL included.
constexpr std::size_t max_unix_path = 107;
constexpr std::uint16_t default_etcd_port = 2379;

enum class Kind { plain, sentinel, cluster, socket, etcd };

struct Scheme {
    std::string_view prefix;
    Kind kind;
    bool tls;
};

constexpr Scheme schemes[] = {
    {"redis://", Kind::plain, false},
    {"rediss://", Kind::plain, true},
    {"redis-sentinel://", Kind::sentinel, false},
    {"rediss-sentinel://", Kind::sentinel, true},
    {"redis-cluster://", Kind::cluster, false},
    {"rediss-cluster://", Kind::cluster, true},
    {"unix://", Kind::socket, false},
    {"etcd://", Kind::etcd, false},
    {"etcds://", Kind::etcd, true},
};

const Scheme* scheme_of(std::string_view url) {
    for (const Scheme& s : schemes)
        if (url.starts_with(s.prefix)) return &s;
    return nullptr;
}

// The TLS twin of a scheme, for "tls_ca needs a rediss-cluster:// URL".
std::string_view tls_prefix(Kind kind) {
    if (kind == Kind::etcd) return "etcds://";
    return kind == Kind::sentinel ? "rediss-sentinel://" : kind == Kind::cluster ? "rediss-cluster://" : "rediss://";
}

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

// A file path or socket path as URL text: percent-encoded, but '/' (and a few other harmless
// bytes) left as they are so the path stays readable. parse_redis_url decodes it back.
std::string show_path(std::string_view path) {
    std::string out;
    for (const char c : path) {
        if (c == '/' || c == '@' || c == ':' || c == '+' || c == ',') out.push_back(c);
        else out += detail::percent_encode(std::string_view(&c, 1));
    }
    return out;
}

// `user:password` (user may be empty); the password is required.
Problem parse_credentials(std::string_view user_text, std::optional<std::string_view> password_text, std::string& user,
                          std::string& password) {
    if (!password_text) return "user given without a password (use user:password@)";
    if (!detail::percent_decode(user_text, user) || !detail::percent_decode(*password_text, password))
        return "bad percent-encoding in user or password";
    if (password.empty()) return "empty password";
    return std::nullopt;
}

// `[user:password]`: the part before the '@' that ends the credentials.
Problem parse_userinfo(std::string_view userinfo, RedisEndpoint& ep) {
    const std::size_t colon = userinfo.find(':');
    const auto password = colon == std::string_view::npos ? std::nullopt : std::optional(userinfo.substr(colon + 1));
    return parse_credentials(userinfo.substr(0, colon), password, ep.user, ep.password);
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

// The query parameters, each accepted once, by the schemes of one family.
enum class Family { sentinel, tls, socket };

struct Query {
    std::optional<std::string_view> sentinel_user, sentinel_password, failover_grace, trust_first_term;
    std::optional<std::string_view> tls_ca, tls_ca_dir, tls_cert, tls_key, tls_server_name, tls_insecure;
    std::optional<std::string_view> db;
};

struct Param {
    std::string_view name;
    std::optional<std::string_view> Query::*slot;
    Family family;
};

constexpr Param params[] = {
    {"sentinel_user", &Query::sentinel_user, Family::sentinel},
    {"sentinel_password", &Query::sentinel_password, Family::sentinel},
    {"failover_grace", &Query::failover_grace, Family::sentinel},
    {"trust_first_term", &Query::trust_first_term, Family::sentinel},
    {"tls_ca", &Query::tls_ca, Family::tls},
    {"tls_ca_dir", &Query::tls_ca_dir, Family::tls},
    {"tls_cert", &Query::tls_cert, Family::tls},
    {"tls_key", &Query::tls_key, Family::tls},
    {"tls_server_name", &Query::tls_server_name, Family::tls},
    {"tls_insecure", &Query::tls_insecure, Family::tls},
    {"db", &Query::db, Family::socket},
};

bool accepts(const Scheme& scheme, Family family) {
    switch (family) {
        case Family::sentinel: return scheme.kind == Kind::sentinel;
        case Family::tls: return scheme.tls;
        case Family::socket: return scheme.kind == Kind::socket;
    }
    return false;
}

// "accepted: a, b, c" or "a redis:// URL takes none", for messages about a key.
std::string accepted_keys(const Scheme& scheme) {
    std::string names;
    for (const Param& p : params)
        if (accepts(scheme, p.family)) names += (names.empty() ? "" : ", ") + std::string(p.name);
    if (names.empty()) return "a " + std::string(scheme.prefix) + " URL takes none";
    return "a " + std::string(scheme.prefix) + " URL accepts " + names + ", each once";
}

// Splits `key=value&...` into `out`, refusing a key the scheme does not take and a repeated one.
Problem split_query(std::string_view query, const Scheme& scheme, Query& out) {
    if (query.empty()) return std::nullopt;
    for (std::size_t begin = 0;;) {
        const std::size_t amp = query.find('&', begin);
        const std::string_view pair = query.substr(begin, amp == std::string_view::npos ? amp : amp - begin);
        const std::size_t eq = pair.find('=');
        const std::string_view key = pair.substr(0, eq);
        const std::string_view value = eq == std::string_view::npos ? "" : pair.substr(eq + 1);
        const Param* param = nullptr;
        for (const Param& p : params)
            if (p.name == key) param = &p;
        if (param == nullptr || (!accepts(scheme, param->family) && param->family != Family::tls))
            return "unknown query parameter (" + accepted_keys(scheme) +
                   "; in a password write '?' as %3F and '&' as %26)";
        const std::string name(param->name);
        if (!accepts(scheme, param->family)) {
            if (scheme.kind == Kind::socket) return name + ": a unix:// socket takes no TLS options (only db=N)";
            return name + " needs a " + std::string(tls_prefix(scheme.kind)) + " URL (TLS)";
        }
        if (out.*param->slot) return name + " given twice (" + accepted_keys(scheme) + ")";
        out.*param->slot = value;
        if (amp == std::string_view::npos) break;
        begin = amp + 1;
    }
    return std::nullopt;
}

// A percent-encoded path or name: not empty, no NUL byte (it ends a C string).
Problem decode_value(std::string_view name, std::optional<std::string_view> text, std::string& out) {
    if (!text) return std::nullopt;
    if (!detail::percent_decode(*text, out)) return std::string(name) + ": bad percent-encoding";
    if (out.empty()) return std::string(name) + ": empty value";
    if (out.find('\0') != std::string::npos) return std::string(name) + ": holds a NUL byte";
    return std::nullopt;
}

Problem apply_sentinel_query(const Query& q, RedisEndpoint& ep) {
    if (q.sentinel_user || q.sentinel_password)
        if (auto problem = parse_credentials(q.sentinel_user.value_or(""), q.sentinel_password, ep.sentinel_user,
                                             ep.sentinel_password))
            return "sentinel_user/sentinel_password: " + *problem;
    if (q.failover_grace == "0") {
        ep.failover_grace = std::chrono::milliseconds::zero();
    } else if (q.failover_grace) {
        const auto d = parse_duration(*q.failover_grace);
        if (!d) return "failover_grace: " + d.error().message;
        if (*d > limits::lease) return "failover_grace: at most " + format_duration(limits::lease);
        ep.failover_grace = *d;
    }
    if (q.trust_first_term) {
        if (*q.trust_first_term != "1" && *q.trust_first_term != "0") return "trust_first_term: must be 1 or 0";
        ep.trust_first_term = *q.trust_first_term == "1";
    }
    return std::nullopt;
}

Problem apply_tls_query(const Query& q, TlsOptions& tls) {
    tls.enabled = true;
    if (auto p = decode_value("tls_ca", q.tls_ca, tls.ca_file)) return p;
    if (auto p = decode_value("tls_ca_dir", q.tls_ca_dir, tls.ca_dir)) return p;
    if (auto p = decode_value("tls_cert", q.tls_cert, tls.cert_file)) return p;
    if (auto p = decode_value("tls_key", q.tls_key, tls.key_file)) return p;
    if (auto p = decode_value("tls_server_name", q.tls_server_name, tls.server_name)) return p;
    if (tls.cert_file.empty() != tls.key_file.empty())
        return tls.cert_file.empty() ? "tls_key needs tls_cert (the client certificate it belongs to)"
                                     : "tls_cert needs tls_key (the certificate's private key)";
    if (q.tls_insecure == "1" || q.tls_insecure == "true") tls.insecure = true;
    else if (q.tls_insecure && q.tls_insecure != "0" && q.tls_insecure != "false")
        return "tls_insecure must be 1 (or true) or 0 (or false)";
    return std::nullopt;
}

// unix://[user:password@]/path/to/redis.sock[?db=N], after the scheme.
Problem parse_socket(std::string_view rest, const Scheme& scheme, RedisEndpoint& ep) {
    const std::size_t slash = rest.find('/');
    if (slash == std::string_view::npos)
        return "a unix:// URL names an absolute socket path (unix:///path/to/redis.sock)";
    // Credentials cannot hold a raw '/', so the first '/' starts the path and an '@' ends them.
    if (slash > 0) {
        if (rest[slash - 1] != '@')
            return "a unix:// URL names an absolute socket path right after '//' or the credentials' '@' "
                   "(unix://user:password@/path/to/redis.sock; in a password write '/' as %2F)";
        if (auto problem = parse_userinfo(rest.substr(0, slash - 1), ep)) return problem;
    }
    std::string_view path = rest.substr(slash), query;
    if (const std::size_t q = path.find('?'); q != std::string_view::npos) {
        query = path.substr(q + 1);
        path = path.substr(0, q);
    }
    Query q;
    if (auto problem = split_query(query, scheme, q)) return problem;
    if (auto problem = decode_value("socket path", path, ep.unix_path)) return problem;
    if (ep.unix_path == "/") return "missing socket path after unix://";
    if (ep.unix_path.size() > max_unix_path)
        return "socket path longer than " + std::to_string(max_unix_path) + " bytes (a Unix socket address's limit)";
    if (q.db && (!parse_int(*q.db, ep.db) || ep.db < 0)) return "db must be a non-negative number (db=0, db=1, ...)";
    return std::nullopt;
}

}  // namespace

std::string RedisEndpoint::redacted() const {
    // The order connections follow: sentinels first, then cluster seeds, then a socket.
    std::string url = uses_sentinel() ? "redis-sentinel://" : uses_cluster() ? "redis-cluster://" : "redis://";
    const bool socket = uses_unix() && !uses_sentinel() && !uses_cluster();
    if (uses_etcd()) url = tls.enabled ? "etcds://" : "etcd://";
    else if (socket) url = "unix://";
    else if (tls.enabled) url.insert(5, "s");  // redis -> rediss
    if (!user.empty() || !password.empty()) url += user + (password.empty() ? "" : ":***") + "@";
    if (uses_sentinel() || uses_cluster() || uses_etcd()) {
        const auto& hosts = uses_sentinel() ? sentinels : uses_cluster() ? cluster_seeds : etcd_members;
        for (std::size_t i = 0; i < hosts.size(); ++i) url += (i ? "," : "") + show(hosts[i]);
    } else if (socket) {
        url += show_path(unix_path);
    } else {
        url += show({host, port});
    }
    std::vector<std::string> query;
    if (db != 0) {
        if (socket) query.push_back("db=" + std::to_string(db));
        else url += "/" + std::to_string(db);
    }
    if (uses_sentinel()) {
        if (!sentinel_user.empty() && !sentinel_password.empty())
            query.push_back("sentinel_user=" + detail::percent_encode(sentinel_user));
        if (!sentinel_password.empty()) query.push_back("sentinel_password=***");
        if (failover_grace != RedisEndpoint{}.failover_grace)
            query.push_back("failover_grace=" + (failover_grace.count() == 0 ? "0" : format_duration(failover_grace)));
        if (!trust_first_term) query.push_back("trust_first_term=0");
    }
    // TLS on a socket has no URL of its own: the options still show what connections do.
    if (tls.enabled) {
        if (!tls.ca_file.empty()) query.push_back("tls_ca=" + show_path(tls.ca_file));
        if (!tls.ca_dir.empty()) query.push_back("tls_ca_dir=" + show_path(tls.ca_dir));
        if (!tls.cert_file.empty()) query.push_back("tls_cert=" + show_path(tls.cert_file));
        if (!tls.key_file.empty()) query.push_back("tls_key=" + show_path(tls.key_file));
        if (!tls.server_name.empty()) query.push_back("tls_server_name=" + detail::percent_encode(tls.server_name));
        if (tls.insecure) query.push_back("tls_insecure=1");
    }
    for (std::size_t i = 0; i < query.size(); ++i) url += (i ? "&" : "?") + query[i];
    if (!uses_sentinel()) return url;
    return url + "#" + detail::percent_encode(master_name);
}

std::expected<RedisEndpoint, UrlError> parse_redis_url(std::string_view url) {
    auto fail = [](std::string why) { return std::unexpected(UrlError{"invalid Redis URL: " + why}); };
    const Scheme* scheme = scheme_of(url);
    if (scheme == nullptr)
        return fail(
            "must start with redis://, rediss://, redis-sentinel://, rediss-sentinel://, redis-cluster://, "
            "rediss-cluster://, unix://, etcd:// or etcds://");
    const bool sentinel = scheme->kind == Kind::sentinel;
    const bool cluster = scheme->kind == Kind::cluster;
    std::string_view rest = url.substr(scheme->prefix.size());

    RedisEndpoint ep;
    if (sentinel) {
        // ...[/db][?query]#master-name: the fragment is last, the query before it.
        const std::size_t hash = rest.find('#');
        if (hash == std::string_view::npos)
            return fail("a " + std::string(scheme->prefix) + " URL names its master group after '#' (...#mymaster)");
        const std::string_view name = rest.substr(hash + 1);
        if (name.find('?') != std::string_view::npos)
            return fail(
                "'?' after the '#master-name': put the ?query before it (...:26379?failover_grace=0#mymaster; "
                "a '?' in a master name is written %3F)");
        if (!detail::percent_decode(name, ep.master_name)) return fail("bad percent-encoding in the master name");
        if (ep.master_name.empty()) return fail("empty master name after '#'");
        rest = rest.substr(0, hash);
    } else if (rest.find('#') != std::string_view::npos) {
        return fail("fragments are not supported (in a password write '#' as %23)");
    }
    if (scheme->kind == Kind::socket) {
        if (auto problem = parse_socket(rest, *scheme, ep)) return fail(*problem);
        return ep;
    }

    Query query;
    if (const std::size_t q = rest.find('?'); q != std::string_view::npos) {
        if (auto problem = split_query(rest.substr(q + 1), *scheme, query)) return fail(*problem);
        rest = rest.substr(0, q);
    }

    std::size_t slash = rest.find('/');
    std::string_view authority = rest.substr(0, slash);
    std::string_view path = slash == std::string_view::npos ? "" : rest.substr(slash + 1);
    // The user:password part ends at the LAST '@' before the host, so a password may hold '@'
    // and ':'; an '@' after the host means a '/' in the password ended the host part early.
    if (path.find('@') != std::string_view::npos)
        return fail("'@' after the host: percent-encode '/' in a password as %2F");

    if (std::size_t at = authority.rfind('@'); at != std::string_view::npos) {
        if (auto problem = parse_userinfo(authority.substr(0, at), ep)) return fail(*problem);
        authority = authority.substr(at + 1);
    }

    if (sentinel) {
        if (authority.empty()) return fail("empty sentinel list (redis-sentinel://host:port[,host:port...]#name)");
        if (auto problem = parse_host_list(authority, default_sentinel_port, "sentinel", ep.sentinels, ep))
            return fail(*problem);
        if (auto problem = apply_sentinel_query(query, ep)) return fail(*problem);
    } else if (scheme->kind == Kind::etcd) {
        if (authority.empty()) return fail("empty member list (etcd://host:port[,host:port...])");
        if (auto problem = parse_host_list(authority, default_etcd_port, "etcd member", ep.etcd_members, ep))
            return fail(*problem);
        if (!path.empty()) return fail("etcd has no databases: no /db in an etcd:// URL");
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
    if (scheme->tls)
        if (auto problem = apply_tls_query(query, ep.tls)) return fail(*problem);
    if (scheme->kind == Kind::etcd && (ep.tls.insecure || !ep.tls.ca_dir.empty()))
        return fail("etcds:// takes tls_ca (a PEM file), not tls_ca_dir, and always verifies: no tls_insecure");
    return ep;
}

}  // namespace fencelock
