#pragma once
// Finding lock keys with SCAN (never KEYS), one page at a time.
#include <expected>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "redis/connection.hpp"
#include "redis/reply.hpp"

namespace fencelock::detail {

struct ScanPage {
    /// Where the next page starts; "0" when the scan is complete.
    std::string cursor;
    std::vector<std::string> keys;
};

/// A SCAN reply: {cursor, {key, ...}}.
std::expected<ScanPage, std::error_code> decode_scan_page(Reply reply);

/// One SCAN step over keys of `type` (hash, stream...) whose names match the glob `pattern`.
std::expected<ScanPage, std::error_code> scan_keys(Connection& c, std::string_view cursor, std::string_view pattern,
                                                   std::string_view type);

/// `s` with the glob syntax SCAN MATCH knows (* ? [ ] \) escaped, to match literally.
std::string glob_escape(std::string_view s);

}  // namespace fencelock::detail
