#pragma once
/// Human durations for the CLI and configuration: an integer followed by a unit.

#include <chrono>
#include <expected>
#include <string>
#include <string_view>

namespace fencelock {

struct DurationError {
    std::string message;
};

/// Parses `250ms`, `30s`, `5m`, `2h` into milliseconds. A bare number, a missing or unknown
/// unit, zero, a negative value or one longer than limits::duration (365 days) is an error: a lease of "0" or "30"
/// (seconds? milliseconds?) is a bug waiting to happen.
std::expected<std::chrono::milliseconds, DurationError> parse_duration(std::string_view text);

/// Formats a duration the way parse_duration reads it, choosing the largest exact unit.
std::string format_duration(std::chrono::milliseconds d);

}  // namespace fencelock
