#pragma once
// The lease hash's `meta` field (src/coordinator/redis/scripts/lib/lease.lua): what acquire sends as the
// holder, and what inspect reads back. Both sides of that text live here.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace fencelock::detail {

/// Who asks: recorded in the lease for `inspect` and `list` (host, pid, label), and the client's
/// own id, which a waiter leaves with its place so that a release by the same client grants it
/// the lock and tells it by its reply (lib/handoff.lua).
struct HolderMeta {
    std::string host;
    std::string pid;
    std::string label;
    std::string client_id{};
};

/// acquire.lua's ARGV[4]: '<pid> <host> <label>'. Spaces in the host (none in a real host name)
/// become '_', so the label, which may hold any text, is all that follows the second space.
std::string holder_text(const HolderMeta& holder);

/// `meta` as lib/lease.lua writes it: '<acquired_ms> <lease_ms> <max_hold_ms> <pid> <host> <label>'.
struct LeaseMeta {
    std::int64_t acquired_ms = 0;
    std::int64_t lease_ms = 0;
    std::int64_t max_hold_ms = 0;
    std::int64_t pid = 0;
    std::string host;
    std::string label;
};

/// nullopt when `text` is not in that shape (a damaged key).
std::optional<LeaseMeta> parse_lease_meta(std::string_view text);

}  // namespace fencelock::detail
