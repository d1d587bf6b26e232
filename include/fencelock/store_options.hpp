#pragma once
/// Where a fenced store lives and how it behaves: database URLs and StoreOptions.

#include <chrono>
#include <cstddef>
#include <expected>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fencelock/options.hpp"
#include "fencelock/redis_url.hpp"
#include "fencelock/store_observer.hpp"

namespace fencelock {

enum class StoreBackend { sqlite, postgresql };

/// Stable name of a backend ("sqlite", "postgresql").
std::string_view to_string(StoreBackend backend) noexcept;

/// A parsed database URL.
struct DatabaseUrl {
    StoreBackend backend = StoreBackend::sqlite;
    /// SQLite: the file path. PostgreSQL: the URL with every password replaced by `***` (what
    /// redacted() returns); never a secret.
    std::string target;
    /// PostgreSQL: the libpq connection keywords and values the URL names (`user`, `password`,
    /// `host`, `port`, `dbname`, then every `?keyword=value`), percent-decoded, in URL order.
    /// Handed to libpq as keyword/value pairs, never as a URL. Empty for SQLite.
    std::vector<std::pair<std::string, std::string>> settings;

    /// The URL with any password replaced by `***`, safe for logs and errors.
    std::string redacted() const;
    /// PostgreSQL: the secret values of `settings` (`password`, `sslpassword`), each also
    /// percent-encoded: what no message may contain.
    std::vector<std::string> secrets() const;
};

/// Parses `sqlite:///path/to/file.db` (also `sqlite://relative/file.db`) or
/// `postgresql://[user[:password]@]host[:port][,host[:port]...][/dbname][?keyword=value&...]`
/// (`postgres://` too; IPv6 hosts in brackets; a Unix socket directory percent-encoded).
/// The user:password part ends at the LAST '@' before the host, so a password may hold '@' and
/// ':' as they are; '/', '?' (and '%') in a password, and any '@' after the host, must be
/// percent-encoded (%2F, %3F, %25, %40). Every component is percent-decoded; %00 is refused.
/// Query keywords must be libpq connection keywords. Any other scheme, an empty path or a
/// malformed URL is an error whose message never quotes the URL. No I/O.
std::expected<DatabaseUrl, UrlError> parse_database_url(std::string_view url);

/// Isolation level of transact() on PostgreSQL. The guard row lock (SELECT ... FOR UPDATE)
/// is what orders fenced writers, so read_committed is enough for the fence; stronger
/// levels protect the caller's own reads and make serialization failures (retried) possible.
/// SQLite transactions are always serializable (one writer at a time).
enum class Isolation { read_committed, repeatable_read, serializable };

struct StoreOptions {
    /// Database URL (see parse_database_url). Required: no default.
    std::string url{};
    /// Limit for opening a PostgreSQL connection; libpq counts whole seconds and at least 2.
    /// Default 2 s.
    milliseconds connect_timeout{2000};
    /// Limit for one statement: PostgreSQL `statement_timeout`, SQLite `busy_timeout` (the wait
    /// for the database's write lock). Exceeding it gives store_errc::timeout. Default 5 s.
    milliseconds statement_timeout{5000};
    /// Attempts of write() and transact() when the database reports a serialization failure,
    /// a deadlock or a stale SQLite snapshot; each failed attempt was rolled back. Default 5.
    unsigned max_attempts = 5;
    /// Full-jitter delays between those attempts. Default 5 ms base, 200 ms max.
    BackoffPolicy retry_backoff{.base = milliseconds(5), .max = milliseconds(200)};
    /// PostgreSQL isolation of transact(). Default read_committed.
    Isolation isolation = Isolation::read_committed;
    /// Connections kept open for concurrent callers of one FencedStore. Default 4.
    std::size_t pool_size = 4;
    /// Whether fences are checked. false makes write(), claim() and transact() unconditional
    /// (the caller's fence and owner are still stored, so last_fence can go backwards): ONLY to
    /// demonstrate or measure what fencing prevents (the demo's unfenced run). Default true.
    bool enforce_fencing = true;
    /// Told of every fence the store refuses (for metrics and logs; PrometheusMetrics and
    /// JsonLogObserver are both StoreObservers). Default none.
    std::shared_ptr<StoreObserver> observer{};

    /// Checks every field (the URL included, without connecting); names the offending field.
    std::expected<void, OptionError> validate() const;
};

}  // namespace fencelock
