#pragma once
// Minimal structured logging: one JSON object per line on stderr. Used where the library must
// not fail silently and has no caller to return an error to (destructors, the keeper thread).
// The line format is shared with JsonLogObserver (src/obs): {"ts":…,"level":…,"event":…,…}.
#include <chrono>
#include <initializer_list>
#include <string>
#include <string_view>

#include "fencelock/log_value.hpp"

namespace fencelock::detail {

using fencelock::LogField;

/// Appends `s` as a quoted JSON string (escaping quotes, backslashes and control characters).
void append_json_string(std::string& out, std::string_view s);

/// `t` as an RFC 3339 UTC timestamp with milliseconds: 2026-12-01T15:04:05.123Z.
std::string rfc3339_utc(std::chrono::system_clock::time_point t);

/// The start of every log line, without its closing brace: {"ts":NOW,"level":…,"event":….
std::string log_line_head(std::string_view level, std::string_view event);

/// Appends `,"key":value` with the value's JSON type; nothing for an absent value.
void append_json_field(std::string& out, std::string_view key, const LogValue& value);

/// Writes {"ts":…,"level":…,"event":…,<fields>} to stderr. Never throws.
void log_event(std::string_view level, std::string_view event, std::initializer_list<LogField> fields) noexcept;

}  // namespace fencelock::detail
