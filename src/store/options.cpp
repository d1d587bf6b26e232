#include "fencelock/store_options.hpp"

#include "common/url_text.hpp"
#include "store/postgres_url.hpp"

namespace fencelock {
namespace {

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

}  // namespace

std::string_view to_string(StoreBackend backend) noexcept {
    return backend == StoreBackend::sqlite ? "sqlite" : "postgresql";
}

std::string DatabaseUrl::redacted() const { return backend == StoreBackend::sqlite ? "sqlite://" + target : target; }

std::vector<std::string> DatabaseUrl::secrets() const {
    std::vector<std::string> out;
    for (const auto& [keyword, value] : settings)
        if (detail::is_secret_keyword(keyword)) {
            out.push_back(value);
            out.push_back(detail::percent_encode(value));
        }
    return out;
}

std::expected<DatabaseUrl, UrlError> parse_database_url(std::string_view url) {
    if (url.empty()) return std::unexpected(UrlError{"database URL is empty"});
    if (starts_with(url, "sqlite://")) {
        std::string_view path = url.substr(9);
        if (path.empty()) return std::unexpected(UrlError{"sqlite URL has no file path (sqlite:///path/file.db)"});
        if (path.find('?') != std::string_view::npos)
            return std::unexpected(UrlError{"sqlite URL takes no parameters"});
        return DatabaseUrl{StoreBackend::sqlite, std::string(path), {}};
    }
    if (starts_with(url, "postgresql://")) return detail::parse_postgres_url(url, 13);
    if (starts_with(url, "postgres://")) return detail::parse_postgres_url(url, 11);
    const auto colon = url.find(':');
    std::string scheme(colon == std::string_view::npos ? url : url.substr(0, colon));
    return std::unexpected(
        UrlError{"unknown database URL scheme '" + scheme + "' (expected sqlite:// or postgresql://)"});
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
