#pragma once
// Redis Cluster's key slot: CRC16-XMODEM of the key modulo 16384, hashing only the hash tag
// when the key has one (the text between the first '{' and the first '}' after it, if that
// text is not empty). This is what CLUSTER KEYSLOT answers; the unit test compares with
// values a real server gave.
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace fencelock::detail {

inline constexpr std::uint16_t cluster_slots = 16384;

/// The slot Redis Cluster stores `key` in.
std::uint16_t key_slot(std::string_view key) noexcept;

/// The key a command is routed by: the first key of EVAL/EVALSHA (none when numkeys is 0),
/// none for the keyless commands fencelock sends (SCAN, TIME, PING, INFO, CONFIG, SCRIPT,
/// CLUSTER, ROLE, ASKING, MULTI, EXEC), XREADGROUP/XREAD's first stream, XGROUP/XINFO's
/// argv[2], otherwise argv[1]. A command routed by the wrong key still arrives: the node
/// answers MOVED and the resend goes where it says.
/// fencelock never sends a command whose keys span slots (every key of one call shares its
/// hash tag), so the first key decides.
std::optional<std::string_view> routing_key(std::span<const std::string_view> argv) noexcept;

}  // namespace fencelock::detail
