#pragma once
/// Where the lock server lives: `redis://[user:password@]host[:port][/db]`.

#include <cstdint>
#include <expected>
#include <string>
#include <string_view>

namespace fencelock {

struct RedisEndpoint {
    std::string host = "127.0.0.1";
    std::uint16_t port = 6379;
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

    /// The URL with the password replaced by `***`, safe for logs and errors.
    std::string redacted() const;
};

struct UrlError {
    /// Describes what is wrong; never contains the password.
    std::string message;
};

/// Parses a redis:// URL. User and password may be percent-encoded (%40 for '@').
std::expected<RedisEndpoint, UrlError> parse_redis_url(std::string_view url);

}  // namespace fencelock
