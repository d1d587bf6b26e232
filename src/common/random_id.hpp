#pragma once
// 128 random bits from the kernel CSPRNG as 32 lowercase hex characters: owner tokens, outbox
// event ids, job ids.
#include <string>

namespace fencelock::detail {

/// Throws std::system_error only if getrandom(2) refuses.
std::string random_hex_id();

}  // namespace fencelock::detail
