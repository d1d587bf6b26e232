#include "lock/lock_ops.hpp"

#include "lock/keys.hpp"
#include "lock/scripts.hpp"
#include "redis/script_runner.hpp"

namespace fencelock::detail {

std::expected<AcquireReply, std::error_code> acquire_once(Connection& c, std::string_view prefix,
                                                          const ResourceName& resource, const OwnerToken& owner,
                                                          const AcquireOptions& options, const HolderMeta& holder,
                                                          WaitPlace place) {
    const auto keys = make_keys(prefix, resource);
    const std::string lease_ms = std::to_string(options.lease.count());
    const std::string max_hold_ms = std::to_string(options.max_hold.count());
    const std::string slot_ms = std::to_string(waiter_slot(options).count());
    const char* mode = place == WaitPlace::fair_line ? "1" : place == WaitPlace::sleepers ? "2" : "0";
    auto reply = run_script(c, scripts::acquire,
                            {keys.lock, keys.fence, keys.waiters, keys.waiter_deadlines, keys.sleepers},
                            {owner.str(), lease_ms, max_hold_ms, holder.host, holder.pid, holder.label, mode, slot_ms});
    if (!reply) return std::unexpected(reply.error());
    return decode_acquire(*reply);
}

std::expected<RenewReply, std::error_code> renew_once(Connection& c, std::string_view prefix,
                                                      const ResourceName& resource, const OwnerToken& owner,
                                                      std::chrono::milliseconds lease) {
    const auto keys = make_keys(prefix, resource);
    const std::string lease_ms = std::to_string(lease.count());
    auto reply = run_script(c, scripts::renew, {keys.lock}, {owner.str(), lease_ms});
    if (!reply) return std::unexpected(reply.error());
    return decode_renew(*reply);
}

std::expected<ReleaseStatus, std::error_code> release_once(Connection& c, std::string_view prefix,
                                                           const ResourceName& resource, const OwnerToken& owner) {
    const auto keys = make_keys(prefix, resource);
    auto reply = run_script(c, scripts::release, {keys.lock, keys.waiters, keys.waiter_deadlines, keys.sleepers},
                            {owner.str(), keys.released});
    if (!reply) return std::unexpected(reply.error());
    return decode_release(*reply);
}

std::expected<bool, std::error_code> leave_line_once(Connection& c, std::string_view prefix,
                                                     const ResourceName& resource, const OwnerToken& owner) {
    const auto keys = make_keys(prefix, resource);
    auto reply = run_script(c, scripts::leave_line, {keys.waiters, keys.waiter_deadlines, keys.lock, keys.sleepers},
                            {owner.str(), keys.released});
    if (!reply) return std::unexpected(reply.error());
    if (reply->kind != Reply::Kind::integer) return std::unexpected(make_error_code(errc::protocol_error));
    return reply->integer == 1;
}

std::chrono::milliseconds waiter_slot(const AcquireOptions& options) {
    // A waiter tries again at least every backoff.max (see LockClient::Impl::acquire_loop);
    // twice that plus slack for a slow round trip keeps a live waiter's place.
    return 2 * options.backoff.max + std::chrono::seconds(2);
}

RenewResult renew_result(RenewStatus status) noexcept {
    switch (status) {
        case RenewStatus::renewed: return RenewResult::renewed;
        case RenewStatus::not_owner: return RenewResult::not_owner;
        case RenewStatus::max_hold_exceeded: return RenewResult::max_hold;
    }
    return RenewResult::error;
}

void report_release(LockObserver* observer, const ResourceName& resource, const OwnerToken& owner,
                    const std::expected<ReleaseStatus, std::error_code>& result,
                    std::optional<std::chrono::microseconds> held_for) noexcept {
    if (observer == nullptr) return;
    const ReleaseResult r = !result ? ReleaseResult::error
                            : *result == ReleaseStatus::released ? ReleaseResult::released
                                                                 : ReleaseResult::not_owner;
    observer->on_release(ReleaseEvent{resource, owner, r, held_for, result ? std::error_code{} : result.error()});
}

std::expected<LockInfo, std::error_code> inspect_once(Connection& c, std::string_view prefix,
                                                      const ResourceName& resource) {
    const auto keys = make_keys(prefix, resource);
    auto reply = run_script(c, scripts::inspect, {keys.lock, keys.fence}, {});
    if (!reply) return std::unexpected(reply.error());
    return decode_inspect(*reply);
}

}  // namespace fencelock::detail
