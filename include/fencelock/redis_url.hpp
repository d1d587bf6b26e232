#pragma once
/// Where the lock server lives:
///
///   redis[s]://[user:password@]host[:port][/db][?query]
///   redis[s]-sentinel://[user:password@]host[:port][,host[:port]...][/db][?query]#master-name
///   redis[s]-cluster://[user:password@]host[:port][,host[:port]...][?query]
///   unix://[user:password@]/path/to/redis.sock[?db=N]
///   etcd[s]://[user:password@]host[:port][,host[:port]...][?query]
///
/// `rediss://`, `rediss-sentinel://` and `rediss-cluster://` are the same with TLS on every
/// connection (redis-py's and Lettuce's `rediss`): to the server, to each sentinel and the master
/// it names, to every cluster node. TLS options go in the query (see TlsOptions), percent-encoded:
/// `tls_ca=FILE`, `tls_ca_dir=DIR`, `tls_cert=FILE` with `tls_key=FILE`, `tls_server_name=NAME`,
/// `tls_insecure=1` (or `true`; `0`/`false`: off). A plain redis:// or redis-cluster:// URL takes
/// no query; a TLS option on a scheme without TLS is refused, as is any unknown or repeated key.
///
/// The unix:// form connects to a Unix socket (its absolute path percent-encoded, at most 107
/// bytes); host and port keep their defaults and are not used. Its only query key is `db`.
///
/// The second form (Lettuce's convention) names the sentinels to ask and the master group
/// they watch; every connection goes to the master the sentinels name and follows it across
/// failovers. Its user:password are the master's. Sentinels that want credentials of their own
/// get them as query parameters `sentinel_user` and `sentinel_password` (percent-encoded, like
/// the user and password). A sentinel's port defaults to 26379. `failover_grace=DURATION`
/// (e.g. 30s; 0 turns it off) sets RedisEndpoint::failover_grace; `trust_first_term=0` clears
/// RedisEndpoint::trust_first_term.
///
/// The third names seed nodes of a Redis Cluster: the client loads the slot map from the first
/// seed that answers and sends each command to the master of its key's slot, following MOVED
/// and ASK. A seed's port defaults to 6379; a cluster has only database 0, so no /db.
///
/// The last names the members of an etcd cluster (etcd 3.4 or later, its v3 gRPC API): the
/// locks then live in etcd instead of Redis, with fences from its Raft revisions (docs/ETCD.md
/// says what differs). A member's port defaults to 2379; user:password are an etcd user's
/// (etcd's `auth enable`). `etcds://` is the same over TLS, with the TLS query keys above except
/// `tls_ca_dir` and `tls_insecure` (gRPC takes a CA file and always verifies); `etcd://` takes
/// no query.

#include <chrono>
#include <cstdint>
#include <expected>
#include <string>
#include <string_view>
#include <vector>

namespace fencelock {

struct HostAndPort {
    std::string host;
    std::uint16_t port = 0;
    bool operator==(const HostAndPort&) const = default;
};

/// TLS on every connection of an endpoint. Verification (the chain against the trust store,
/// and the server's name or IP against the certificate's SAN) is always on unless `insecure`.
struct TlsOptions {
    /// True for the rediss schemes.
    bool enabled = false;
    /// PEM file (tls_ca) and/or directory of hashed certificates (tls_ca_dir) to trust. Both
    /// empty: the system trust store.
    std::string ca_file;
    std::string ca_dir;
    /// Client certificate and its key (tls_cert, tls_key; PEM), for servers with
    /// `tls-auth-clients yes`. Both or neither.
    std::string cert_file;
    std::string key_file;
    /// The name to send (SNI) and verify (tls_server_name); empty: the host connected to.
    std::string server_name;
    /// tls_insecure=1: no verification at all. Never the default; logged as a warning on
    /// every connection and shown by inspect and list.
    bool insecure = false;
    bool operator==(const TlsOptions&) const = default;
};

struct RedisEndpoint {
    /// The server (redis://). For a Sentinel endpoint: the first sentinel; connections never
    /// use it, they go where the sentinels say.
    std::string host = "127.0.0.1";
    std::uint16_t port = 6379;
    /// A Unix socket to connect to instead of host:port (unix://); empty: TCP.
    std::string unix_path;
    /// Logical database selected after connecting (SELECT); 0 by default.
    int db = 0;
    /// ACL user name; empty means the default user (plain `AUTH password`).
    std::string user;
    /// Empty means no AUTH. Never printed: use redacted() for messages.
    std::string password;

    /// Accept a server whose maxmemory-policy may evict keys. fencelock refuses such a server
    /// by default (see eviction_category()): set this only when its keys can never be evicted
    /// (e.g. maxmemory is far above what the data set can reach). Default false.
    bool allow_eviction = false;

    /// The sentinels to ask for the master, in the order to try them. Empty (the default):
    /// not a Sentinel endpoint, connections go to host:port.
    std::vector<HostAndPort> sentinels;
    /// The master group the sentinels monitor (`sentinel monitor NAME ...`); required with
    /// sentinels.
    std::string master_name;
    /// Credentials for the sentinels themselves (AUTH [user] password), independent of the
    /// master's. Empty password: no AUTH on sentinels. Never printed.
    std::string sentinel_user;
    std::string sentinel_password;
    /// After a promotion, the new master grants no new lease until this long after it became
    /// master (as the sentinels saw it): a lease the old master granted and never replicated
    /// has run out by then, so its holder has stopped before anyone else starts. Set it to at
    /// least the longest lease any client takes on this group; leases that did replicate are
    /// renewed through the grace as usual. Zero turns it off. Default 30 s (the default lease).
    std::chrono::milliseconds failover_grace{30'000};
    /// A group in its first term owes no failover grace: a majority of sentinels hold the
    /// master at config epoch 0 (Sentinel never failed it over), and the master confirms from
    /// its own INFO that it has not been promoted since it started and started with nothing to
    /// load (so no earlier master, nor a restart after a promotion, can hide behind an epoch 0
    /// that people re-created). Its first leases are granted at once. A master that cannot say
    /// (an ACL without +info, Redis before 7.0, appendonly on) or says otherwise, and a group
    /// after any failover, wait out the rest of the grace as before. False: a group the
    /// sentinels have known for less than the grace always waits out the rest of it once. URL
    /// query `trust_first_term=0`. Default true.
    bool trust_first_term = true;

    /// Seed nodes of a Redis Cluster (redis-cluster://), in the order to try them. Empty (the
    /// default): not a cluster endpoint. host and port are the first seed's.
    std::vector<HostAndPort> cluster_seeds;

    /// The members of an etcd cluster (etcd[s]://), in the order to try them. Empty (the default):
    /// a Redis endpoint. host and port are the first member's.
    std::vector<HostAndPort> etcd_members;

    /// TLS for every connection (rediss schemes).
    TlsOptions tls;

    /// True when connections go to a Unix socket.
    bool uses_unix() const noexcept { return !unix_path.empty(); }
    /// True when connections find the master through sentinels.
    bool uses_sentinel() const noexcept { return !sentinels.empty(); }
    /// True when commands are routed over a Redis Cluster's masters by key slot.
    bool uses_cluster() const noexcept { return !cluster_seeds.empty(); }
    /// True when the locks live in etcd (etcd://), not in Redis.
    bool uses_etcd() const noexcept { return !etcd_members.empty(); }

    /// The URL with the passwords replaced by `***`, safe for logs and errors: its scheme
    /// (rediss... with TLS, unix:// for a socket), the TLS options (file paths are no secret)
    /// and `tls_insecure=1` when set.
    std::string redacted() const;
};

struct UrlError {
    /// Describes what is wrong; never contains a password.
    std::string message;
};

/// Parses a redis[s]://, redis[s]-sentinel://, redis[s]-cluster://, unix:// or etcd[s]:// URL. User and
/// passwords may be percent-encoded (%40 for '@'); in a password write '?' as %3F, '#' as %23 and
/// '/' as %2F. A sentinel URL's query goes before its #master-name. No I/O: TLS files are not
/// opened here.
std::expected<RedisEndpoint, UrlError> parse_redis_url(std::string_view url);

}  // namespace fencelock
