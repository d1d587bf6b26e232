#include <libpq-fe.h>

#include <memory>

#include "fencelock/store_options.hpp"

namespace fencelock {
namespace {

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

}  // namespace

std::string_view to_string(StoreBackend backend) noexcept {
    return backend == StoreBackend::sqlite ? "sqlite" : "postgresql";
}

std::string DatabaseUrl::redacted() const {
    if (backend == StoreBackend::sqlite) return "sqlite://" + target;
    // postgresql://user:password@host...: hide what lies between the first ':' of the
    // userinfo and the '@'.
    const auto scheme_end = target.find("://");
    if (scheme_end == std::string::npos) return target;
    const auto start = scheme_end + 3;
    const auto at = target.find('@', start);
    const auto slash = target.find('/', start);
    if (at == std::string::npos || (slash != std::string::npos && slash < at)) return target;
    const auto colon = target.find(':', start);
    if (colon == std::string::npos || colon > at) return target;
    return target.substr(0, colon + 1) + "***" + target.substr(at);
}

std::expected<DatabaseUrl, UrlError> parse_database_url(std::string_view url) {
    if (url.empty()) return std::unexpected(UrlError{"database URL is empty"});
    if (starts_with(url, "sqlite://")) {
        std::string_view path = url.substr(9);
        if (path.empty()) return std::unexpected(UrlError{"sqlite URL has no file path (sqlite:///path/file.db)"});
        if (path.find('?') != std::string_view::npos)
            return std::unexpected(UrlError{"sqlite URL takes no parameters"});
        return DatabaseUrl{StoreBackend::sqlite, std::string(path)};
    }
    if (starts_with(url, "postgresql://") || starts_with(url, "postgres://")) {
        std::string text(url);
        char* err = nullptr;
        PQconninfoOption* opts = PQconninfoParse(text.c_str(), &err);
        if (opts == nullptr) {
            std::string message = err != nullptr ? err : "cannot parse the PostgreSQL URL";
            if (err != nullptr) PQfreemem(err);
            while (!message.empty() && message.back() == '\n') message.pop_back();
            // libpq's message may quote the URL: never echo a password.
            return std::unexpected(UrlError{"invalid PostgreSQL URL: " +
                                            DatabaseUrl{StoreBackend::postgresql, message}.redacted()});
        }
        PQconninfoFree(opts);
        return DatabaseUrl{StoreBackend::postgresql, std::move(text)};
    }
    const auto colon = url.find(':');
    std::string scheme(colon == std::string_view::npos ? url : url.substr(0, colon));
    return std::unexpected(UrlError{"unknown database URL scheme '" + scheme +
                                    "' (expected sqlite:// or postgresql://)"});
}

std::expected<void, OptionError> StoreOptions::validate() const {
    auto bad = [](std::string field, std::string message) {
        return std::unexpected(OptionError{std::move(field), std::move(message)});
    };
    if (auto u = parse_database_url(url); !u) return bad("url", u.error().message);
    if (connect_timeout <= milliseconds::zero()) return bad("connect_timeout", "must be positive");
    if (statement_timeout <= milliseconds::zero()) return bad("statement_timeout", "must be positive");
    if (max_attempts < 1) return bad("max_attempts", "must be at least 1");
    if (max_attempts > 100) return bad("max_attempts", "must be at most 100");
    if (auto b = retry_backoff.validate(); !b) return bad("retry_backoff." + b.error().field, b.error().message);
    if (pool_size < 1) return bad("pool_size", "must be at least 1");
    return {};
}

}  // namespace fencelock
