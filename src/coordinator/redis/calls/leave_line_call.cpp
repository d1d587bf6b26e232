#include "coordinator/redis/calls/leave_line_call.hpp"

#include "coordinator/redis/calls/reply_fields.hpp"
#include "coordinator/redis/keys.hpp"
#include "coordinator/redis/scripts.hpp"
#include "redis/script_runner.hpp"

namespace fencelock::detail {

std::expected<bool, std::error_code> decode_leave_line(const Reply& reply) {
    constexpr std::int64_t place_given_up = 1, grant_given_back = 2;
    // Any other integer reads as "had no place", as it always has; only the type is checked.
    if (reply.kind != Reply::Kind::integer) return malformed_reply();
    return reply.integer == place_given_up || reply.integer == grant_given_back;
}

OwnedScriptCall leave_line_script_call(std::string_view prefix, const ResourceName& resource, const OwnerToken& owner) {
    auto k = make_keys(prefix, resource);
    return {{std::move(k.waiters), std::move(k.waiter_deadlines), std::move(k.lock), std::move(k.sleepers),
             std::move(k.fence), std::move(k.handoff)},
            {owner.str(), std::move(k.released)}};
}

std::expected<bool, std::error_code> leave_line_once(Connection& c, std::string_view prefix,
                                                     const ResourceName& resource, const OwnerToken& owner) {
    auto reply = run_script(c, scripts::leave_line, leave_line_script_call(prefix, resource, owner).view());
    if (!reply) return std::unexpected(reply.error());
    return decode_leave_line(*reply);
}

}  // namespace fencelock::detail
