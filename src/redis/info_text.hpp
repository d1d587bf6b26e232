#pragma once
// INFO's reply text: "# Section" headers and "name:value" lines, each ending in "\r\n".
#include <optional>
#include <string_view>

namespace fencelock::detail {

/// The value of the line `name:value` in `info` (a whole line's name, not a suffix of one);
/// nullopt when there is no such line or its value is empty.
std::optional<std::string_view> info_field(std::string_view info, std::string_view name) noexcept;

}  // namespace fencelock::detail
