#include "coordinator/redis/calls/force_release_call.hpp"

#include "coordinator/redis/calls/reply_fields.hpp"
#include "coordinator/redis/keys.hpp"
#include "coordinator/redis/scripts.hpp"
#include "redis/script_runner.hpp"

namespace fencelock::detail {
namespace {

// The reply's first element.
constexpr std::int64_t not_held = 0, released = 1, owner_mismatch = 2, active = 3;
// Element positions after the flag; then the audit id (released) or the lease length and
// whether the lease was ever renewed (active).
constexpr std::size_t owner_at = 1, fence_at = 2, since_renew_at = 3, last_at = 4, renewed_at = 5;

}  // namespace

std::expected<ForceReleaseOutcome, std::error_code> decode_force_release(const Reply& reply) {
    std::int64_t flag = 0;
    if (!is_array(reply, 1) || !as_int(reply.elements[0], flag)) return malformed_reply();
    const auto& e = reply.elements;
    ForceReleaseOutcome out;
    switch (flag) {
        case not_held:
            if (e.size() != 1) return malformed_reply();
            out.status = ForceReleaseStatus::not_held;
            return out;
        case owner_mismatch:
            if (e.size() != 2) return malformed_reply();
            out.status = ForceReleaseStatus::owner_mismatch;
            out.owner = e[owner_at].str;
            return out;
        case released:
        case active: {
            std::int64_t since_renew = 0, lease = 0;
            const std::size_t size = flag == released ? last_at + 1 : renewed_at + 1;
            if (e.size() != size || !as_int(e[since_renew_at], since_renew)) return malformed_reply();
            if (!as_fence(e[fence_at], out.fence)) return malformed_reply();
            out.owner = e[owner_at].str;
            out.since_renew = std::chrono::milliseconds(since_renew);
            if (flag == released) {
                out.status = ForceReleaseStatus::released;
                out.audit_id = e[last_at].str;
            } else {
                std::int64_t renewed = 0;
                if (!as_int(e[last_at], lease) || !as_int(e[renewed_at], renewed) || renewed < 0 || renewed > 1)
                    return malformed_reply();
                out.status = ForceReleaseStatus::active;
                out.renewed = renewed == 1;
                out.lease = std::chrono::milliseconds(lease);
            }
            return out;
        }
        default: return malformed_reply();
    }
}

std::expected<ForceReleaseOutcome, std::error_code> force_release_once(Connection& c, std::string_view prefix,
                                                                       const ResourceName& resource,
                                                                       const ForceReleaseRequest& request) {
    const auto keys = make_keys(prefix, resource);
    const std::string expected = request.expected_owner ? request.expected_owner->str() : "";
    auto reply = run_script(c, scripts::force_release, {keys.lock, keys.audit},
                            {resource.str(), request.reason, request.operator_name, expected,
                             request.even_if_active ? "1" : "0", keys.released});
    if (!reply) return std::unexpected(reply.error());
    return decode_force_release(*reply);
}

}  // namespace fencelock::detail
