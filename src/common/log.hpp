#pragma once
// Minimal structured logging: one JSON object per line on stderr. Used where the library must
// not fail silently and has no caller to return an error to (destructors, the keeper thread).
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

namespace fencelock::detail {

using LogField = std::pair<std::string_view, std::string>;

/// Appends `s` as a quoted JSON string (escaping quotes, backslashes and control characters).
void append_json_string(std::string& out, std::string_view s);

/// Writes {"level":…,"event":…,<fields>} to stderr. Never throws.
void log_event(std::string_view level, std::string_view event, std::initializer_list<LogField> fields) noexcept;

}  // namespace fencelock::detail
