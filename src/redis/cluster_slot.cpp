#include "redis/cluster_slot.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>

namespace fencelock::detail {
namespace {

// CRC16-XMODEM (polynomial 0x1021, initial value 0), the variant Redis Cluster specifies.
constexpr std::array<std::uint16_t, 256> make_table() {
    std::array<std::uint16_t, 256> table{};
    for (unsigned i = 0; i < 256; ++i) {
        std::uint16_t crc = static_cast<std::uint16_t>(i << 8);
        for (int bit = 0; bit < 8; ++bit)
            crc = static_cast<std::uint16_t>((crc & 0x8000) ? (crc << 1) ^ 0x1021 : crc << 1);
        table[i] = crc;
    }
    return table;
}
constexpr auto crc_table = make_table();

std::uint16_t crc16(std::string_view bytes) noexcept {
    std::uint16_t crc = 0;
    for (unsigned char c : bytes) crc = static_cast<std::uint16_t>((crc << 8) ^ crc_table[((crc >> 8) ^ c) & 0xff]);
    return crc;
}

bool iequals(std::string_view a, std::string_view upper) {
    return a.size() == upper.size() && std::equal(a.begin(), a.end(), upper.begin(), [](char x, char u) {
               return std::toupper(static_cast<unsigned char>(x)) == u;
           });
}

}  // namespace

std::uint16_t key_slot(std::string_view key) noexcept {
    if (const auto open = key.find('{'); open != std::string_view::npos) {
        const auto close = key.find('}', open + 1);
        if (close != std::string_view::npos && close > open + 1) key = key.substr(open + 1, close - open - 1);
    }
    return crc16(key) % cluster_slots;
}

std::optional<std::string_view> routing_key(std::span<const std::string_view> argv) noexcept {
    if (argv.size() < 2) return std::nullopt;
    const std::string_view verb = argv[0];
    if (iequals(verb, "EVAL") || iequals(verb, "EVALSHA")) {
        unsigned numkeys = 0;
        const auto n = argv.size() > 2 ? argv[2] : std::string_view{};
        const auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), numkeys);
        if (ec != std::errc{} || end != n.data() + n.size() || numkeys == 0 || argv.size() < 4) return std::nullopt;
        return argv[3];
    }
    if ((iequals(verb, "XGROUP") || iequals(verb, "XINFO")) && argv.size() > 2) return argv[2];  // XGROUP CREATE key
    if (iequals(verb, "XREADGROUP") || iequals(verb, "XREAD")) {
        for (std::size_t i = 1; i + 1 < argv.size(); ++i)
            if (iequals(argv[i], "STREAMS")) return argv[i + 1];
        return std::nullopt;
    }
    static constexpr std::string_view keyless[] = {"SCAN", "TIME",   "PING",  "INFO", "CONFIG", "SCRIPT", "CLUSTER",
                                                   "ROLE", "ASKING", "MULTI", "EXEC", "DBSIZE", "WAIT"};
    if (std::ranges::any_of(keyless, [&](auto k) { return iequals(verb, k); })) return std::nullopt;
    return argv[1];
}

}  // namespace fencelock::detail
