#include "redis/info_text.hpp"

namespace fencelock::detail {

std::optional<std::string_view> info_field(std::string_view info, std::string_view name) noexcept {
    for (std::size_t at = info.find(name); at != std::string_view::npos; at = info.find(name, at + 1)) {
        const std::size_t colon = at + name.size();
        if ((at != 0 && info[at - 1] != '\n') || colon >= info.size() || info[colon] != ':') continue;
        const std::size_t end = info.find_first_of("\r\n", colon + 1);
        const std::string_view value = info.substr(colon + 1, end == std::string_view::npos ? end : end - colon - 1);
        if (!value.empty()) return value;
    }
    return std::nullopt;
}

}  // namespace fencelock::detail
