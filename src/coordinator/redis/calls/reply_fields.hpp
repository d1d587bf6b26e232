#pragma once
// Reading the fields of a script reply, shared by the per-script call files. Every decoder
// answers a reply it cannot read with one of two errors, which tell the caller what to do:
// protocol_error (the reply has the wrong shape: a mismatched script version, not a key to
// repair) or corrupt_key (the shape is right but the lock's data is damaged: an operator must
// look at the key).
#include <cstdint>
#include <expected>
#include <optional>
#include <system_error>

#include "fencelock/error.hpp"
#include "fencelock/types.hpp"
#include "redis/reply.hpp"

namespace fencelock::detail {

inline std::unexpected<std::error_code> malformed_reply() {
    return std::unexpected(make_error_code(errc::protocol_error));
}
inline std::unexpected<std::error_code> corrupt_key() { return std::unexpected(make_error_code(errc::corrupt_key)); }

/// An array of at least `min_size` elements.
bool is_array(const Reply& r, std::size_t min_size);
/// An integer reply, or a string holding exactly a decimal integer (HGET, HGETALL).
bool as_int(const Reply& r, std::int64_t& out);

/// A fence in a script reply: a decimal string (exact up to 2^63 - 1) or, from scripts of
/// earlier versions, an integer. nullopt when it is neither or negative.
std::optional<FencingToken> parse_fence(const Reply& reply);
bool as_fence(const Reply& r, FencingToken& out);

}  // namespace fencelock::detail
