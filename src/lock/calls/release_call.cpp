#include "lock/calls/release_call.hpp"

#include "lock/calls/reply_fields.hpp"
#include "lock/keys.hpp"
#include "lock/scripts.hpp"
#include "redis/script_runner.hpp"

namespace fencelock::detail {

std::expected<ReleaseStatus, std::error_code> decode_release(const Reply& reply) {
    constexpr std::int64_t not_owner = 0, released = 1;
    if (reply.kind != Reply::Kind::integer) return malformed_reply();
    if (reply.integer == released) return ReleaseStatus::released;
    if (reply.integer == not_owner) return ReleaseStatus::not_owner;
    return malformed_reply();
}

std::expected<ReleaseStatus, std::error_code> release_once(Connection& c, std::string_view prefix,
                                                           const ResourceName& resource, const OwnerToken& owner) {
    const auto keys = make_keys(prefix, resource);
    auto reply = run_script(c, scripts::release, {keys.lock, keys.waiters, keys.waiter_deadlines, keys.sleepers, keys.fence, keys.handoff},
                            {owner.str(), keys.released});
    if (!reply) return std::unexpected(reply.error());
    return decode_release(*reply);
}

}  // namespace fencelock::detail
