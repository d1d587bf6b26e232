#include "fencelock/types.hpp"

#include "common/random_id.hpp"

#include <sys/random.h>

#include <array>
#include <cerrno>
#include <system_error>

namespace fencelock {

std::expected<ResourceName, InvalidName> ResourceName::make(std::string_view name) {
    if (name.empty()) return std::unexpected(InvalidName{"resource name is empty"});
    if (name.size() > max_size)
        return std::unexpected(InvalidName{"resource name is " + std::to_string(name.size()) + " bytes; the limit is " +
                                           std::to_string(max_size)});
    if (name.front() == '}')
        return std::unexpected(
            InvalidName{"resource name must not start with '}' (it would empty the Redis Cluster hash tag)"});
    return ResourceName(std::string(name));
}

namespace detail {

std::string random_hex_id() {
    std::array<unsigned char, 16> bytes{};
    std::size_t filled = 0;
    while (filled < bytes.size()) {
        ssize_t n = getrandom(bytes.data() + filled, bytes.size() - filled, 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            throw std::system_error(errno, std::generic_category(), "getrandom");
        }
        filled += static_cast<std::size_t>(n);
    }
    static constexpr char hex[] = "0123456789abcdef";
    std::string id;
    id.reserve(bytes.size() * 2);
    for (unsigned char b : bytes) {
        id.push_back(hex[b >> 4]);
        id.push_back(hex[b & 0xf]);
    }
    return id;
}

}  // namespace detail

OwnerToken OwnerToken::generate() { return OwnerToken(detail::random_hex_id()); }

std::expected<OwnerToken, InvalidName> OwnerToken::make(std::string_view token) {
    if (token.empty()) return std::unexpected(InvalidName{"owner token is empty"});
    if (token.size() > max_size)
        return std::unexpected(InvalidName{"owner token is longer than " + std::to_string(max_size) + " characters"});
    for (char c : token) {
        if (c <= ' ' || c > '~')
            return std::unexpected(InvalidName{"owner token must be printable ASCII without spaces"});
    }
    return OwnerToken(std::string(token));
}

}  // namespace fencelock
