#pragma once
// The postgresql:// half of parse_database_url (grammar in fencelock/store_options.hpp).
#include <expected>
#include <string_view>

#include "fencelock/store_options.hpp"

namespace fencelock::detail {

/// Parses `url`, whose first `scheme_size` bytes are "postgresql://" or "postgres://", into
/// libpq keyword/value settings and a redacted target. No I/O; messages never quote the URL.
std::expected<DatabaseUrl, UrlError> parse_postgres_url(std::string_view url, std::size_t scheme_size);

/// Whether a libpq keyword's value is a secret no message may show (`password`, `sslpassword`).
bool is_secret_keyword(std::string_view keyword) noexcept;

}  // namespace fencelock::detail
