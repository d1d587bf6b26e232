#pragma once
// Pieces of URL text shared by the Redis and the database URL parsers: percent-decoding, and
// scrubbing a secret out of a message as a last line of defence.
#include <span>
#include <string>
#include <string_view>

namespace fencelock::detail {

/// Decodes %XX escapes of `in` into `out`; false on a malformed escape (`%`, `%4`, `%zz`).
bool percent_decode(std::string_view in, std::string& out);

/// `in` with every byte outside RFC 3986's unreserved set written as %XX (upper case).
std::string percent_encode(std::string_view in);

/// `text` with every occurrence of each non-empty secret replaced by `***`.
std::string scrub(std::string text, std::span<const std::string> secrets);

}  // namespace fencelock::detail
