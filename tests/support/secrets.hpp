#pragma once
// Leak checks for passwords: not only the whole secret, every piece of it.
#include <string>
#include <string_view>
#include <vector>

namespace fencelock::test_support {

/// Every substring of `secret` at least `min_size` bytes long that occurs in `text` (empty: no
/// leak), longest first, for the failure message.
inline std::vector<std::string> leaked_fragments(std::string_view text, std::string_view secret,
                                                 std::size_t min_size = 3) {
    std::vector<std::string> found;
    for (std::size_t len = secret.size(); len >= min_size && len > 0; --len)
        for (std::size_t at = 0; at + len <= secret.size(); ++at)
            if (text.find(secret.substr(at, len)) != std::string_view::npos) found.emplace_back(secret.substr(at, len));
    return found;
}

}  // namespace fencelock::test_support
