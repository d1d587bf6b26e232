#pragma once
// The two checks every validate() is made of, so each names the offending field the same way.
#include <expected>
#include <string>

#include "fencelock/backoff.hpp"
#include "fencelock/duration.hpp"

namespace fencelock::detail {

inline std::unexpected<OptionError> bad(std::string field, std::string message) {
    return std::unexpected(OptionError{std::move(field), std::move(message)});
}

inline std::expected<void, OptionError> at_most(std::string field, milliseconds value, milliseconds limit) {
    if (value > limit) return bad(std::move(field), "must be at most " + format_duration(limit));
    return {};
}

}  // namespace fencelock::detail
