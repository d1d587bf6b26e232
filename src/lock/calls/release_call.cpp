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

OwnedScriptCall release_script_call(std::string_view prefix, const ResourceName& resource, const OwnerToken& owner) {
    auto k = make_keys(prefix, resource);
    return {{std::move(k.lock), std::move(k.waiters), std::move(k.waiter_deadlines), std::move(k.sleepers),
             std::move(k.fence), std::move(k.handoff)},
            {owner.str(), std::move(k.released)}};
}

std::expected<ReleaseStatus, std::error_code> release_once(Connection& c, std::string_view prefix,
                                                           const ResourceName& resource, const OwnerToken& owner) {
    auto reply = run_script(c, scripts::release, release_script_call(prefix, resource, owner).view());
    if (!reply) return std::unexpected(reply.error());
    return decode_release(*reply);
}

}  // namespace fencelock::detail
