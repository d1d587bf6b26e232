// The store-text rule (fencelock/store_text.hpp): valid UTF-8 without NUL.
#include "fencelock/store_text.hpp"

#include <string>

#include "store/store_impl.hpp"

namespace fencelock {
namespace {

std::unexpected<InvalidName> refused(std::string_view why, std::size_t offset) {
    return std::unexpected(InvalidName{"is not store text (valid UTF-8 without NUL): " + std::string(why) +
                                       " at byte offset " + std::to_string(offset)});
}

}  // namespace

/*
 * The decoder follows the well-formed byte sequences of Unicode (table 3-7, RFC 3629 section 4):
 * the lead byte fixes the length and the range of the SECOND byte (which is where overlong
 * forms, surrogates and code points above U+10FFFF are excluded); every later byte is a plain
 * continuation byte 80..BF. This is the set PostgreSQL's UTF8 encoding accepts, so nothing
 * passed here is refused by the server with 22021.
 */
std::expected<void, InvalidName> validate_store_text(std::string_view text) {
    const auto* p = reinterpret_cast<const unsigned char*>(text.data());
    const std::size_t n = text.size();
    for (std::size_t i = 0; i < n;) {
        const unsigned c = p[i];
        if (c == 0) return refused("a NUL byte", i);
        if (c < 0x80) {
            ++i;
            continue;
        }
        std::size_t len = 0;
        unsigned lo = 0x80, hi = 0xBF;
        if (c >= 0xC2 && c <= 0xDF) len = 2;
        else if (c == 0xE0) len = 3, lo = 0xA0;
        else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) len = 3;
        else if (c == 0xED) len = 3, hi = 0x9F;
        else if (c == 0xF0) len = 4, lo = 0x90;
        else if (c >= 0xF1 && c <= 0xF3) len = 4;
        else if (c == 0xF4) len = 4, hi = 0x8F;
        else return refused("an invalid UTF-8 lead byte", i);
        if (n - i < len) return refused("a truncated UTF-8 sequence", i);
        if (p[i + 1] < lo || p[i + 1] > hi) return refused("an invalid UTF-8 sequence", i);
        for (std::size_t k = 2; k < len; ++k)
            if ((p[i + k] & 0xC0) != 0x80) return refused("an invalid UTF-8 sequence", i);
        i += len;
    }
    return {};
}

}  // namespace fencelock

namespace fencelock::detail {

StoreResult<void> check_text(std::string_view what, std::string_view text) {
    if (auto ok = validate_store_text(text); !ok)
        return std::unexpected(store_error(store_errc::invalid_input, std::string(what) + " " + ok.error().message));
    return {};
}

StoreResult<void> check_text(std::initializer_list<TextArg> args) {
    for (const TextArg& a : args)
        if (auto ok = check_text(a.what, a.text); !ok) return ok;
    return {};
}

}  // namespace fencelock::detail
