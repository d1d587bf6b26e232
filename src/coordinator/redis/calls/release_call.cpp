#include "coordinator/redis/calls/release_call.hpp"

#include "coordinator/redis/calls/reply_fields.hpp"
#include "coordinator/redis/keys.hpp"
#include "coordinator/redis/scripts.hpp"
#include "redis/script_runner.hpp"

namespace fencelock::detail {

std::expected<ReleaseReply, std::error_code> decode_release_reply(const Reply& reply) {
    constexpr std::int64_t not_held = -1, not_owner = 0, released = 1;
    if (reply.kind == Reply::Kind::integer) {
        if (reply.integer == released) return ReleaseReply{ReleaseStatus::released};
        if (reply.integer == not_owner) return ReleaseReply{ReleaseStatus::not_owner};
        if (reply.integer == not_held) return ReleaseReply{ReleaseStatus::not_held};
        return malformed_reply();
    }
    // {1, owner, fence, ttl}: released, and granted to the next waiter.
    std::int64_t flag = 0, ttl = 0;
    GrantMessage g;
    if (!is_array(reply, 4) || reply.elements.size() != 4 || !as_int(reply.elements[0], flag) || flag != released ||
        reply.elements[1].kind != Reply::Kind::string || reply.elements[1].str.empty() ||
        !as_fence(reply.elements[2], g.grant.fence) || !as_int(reply.elements[3], ttl) || ttl <= 0)
        return malformed_reply();
    g.owner = reply.elements[1].str;
    g.grant.ttl = std::chrono::milliseconds(ttl);
    return ReleaseReply{ReleaseStatus::released, std::move(g)};
}

std::expected<ReleaseStatus, std::error_code> decode_release(const Reply& reply) {
    auto decoded = decode_release_reply(reply);
    if (!decoded) return std::unexpected(decoded.error());
    return decoded->status;
}

OwnedScriptCall release_script_call(std::string_view prefix, const ResourceName& resource, const OwnerToken& owner,
                                    const HolderMeta* client, const Successor* successor) {
    auto k = make_keys(prefix, resource);
    OwnedScriptCall call{{std::move(k.lock), std::move(k.waiters), std::move(k.waiter_deadlines), std::move(k.sleepers),
                          std::move(k.fence), std::move(k.handoff)},
                         {owner.str(), std::move(k.released)}};
    if (!client || client->client_id.empty()) return call;
    call.args.push_back(client->client_id);
    if (successor) {
        call.args.emplace_back(successor->owner);
        call.args.push_back(std::to_string(successor->lease.count()));
        call.args.push_back(std::to_string(successor->max_hold.count()));
        call.args.push_back(holder_text(*client));
    }
    return call;
}

std::expected<ReleaseReply, std::error_code> release_for_client(Connection& c, std::string_view prefix,
                                                                const ResourceName& resource, const OwnerToken& owner,
                                                                const HolderMeta* client, const Successor* successor) {
    auto reply =
        run_script(c, scripts::release, release_script_call(prefix, resource, owner, client, successor).view());
    if (!reply) return std::unexpected(reply.error());
    return decode_release_reply(*reply);
}

std::expected<ReleaseStatus, std::error_code> release_once(Connection& c, std::string_view prefix,
                                                           const ResourceName& resource, const OwnerToken& owner) {
    auto reply = release_for_client(c, prefix, resource, owner, nullptr);
    if (!reply) return std::unexpected(reply.error());
    return reply->status;
}

}  // namespace fencelock::detail
