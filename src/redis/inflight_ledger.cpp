#include "redis/inflight_ledger.hpp"

#include <algorithm>

namespace fencelock::detail {

void InflightLedger::note_buffered(std::size_t still_buffered) noexcept {
    // More buffered than handed cannot happen; clamping keeps the prefix inside the stream.
    written_ = handed_ - std::min<std::uint64_t>(still_buffered, handed_);
}

}  // namespace fencelock::detail
