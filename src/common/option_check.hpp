#pragma once
// The checks every validate() is made of, so each names the offending field the same way.
#include <expected>
#include <string>
#include <string_view>

#include "fencelock/backoff.hpp"
#include "fencelock/duration.hpp"

namespace fencelock::detail {

inline std::unexpected<OptionError> bad(std::string field, std::string message) {
    return std::unexpected(OptionError{std::move(field), std::move(message)});
}

/// A limit's message gives both numbers: the bound and what was given.
inline std::expected<void, OptionError> at_most(std::string field, milliseconds value, milliseconds limit) {
    if (value > limit)
        return bad(std::move(field), "must be at most " + format_duration(limit) + ", not " + format_duration(value));
    return {};
}

inline std::expected<void, OptionError> at_least(std::string field, milliseconds value, milliseconds limit,
                                                 std::string_view what = {}) {
    if (value < limit)
        return bad(std::move(field), "must be at least " + (what.empty() ? "" : std::string(what) + " (") +
                                         format_duration(limit) + (what.empty() ? "" : ")") + ", not " +
                                         format_duration(value));
    return {};
}

}  // namespace fencelock::detail
