#include "coordinator/redis/redis_coordinator.hpp"

#include <unistd.h>

#include "common/random_id.hpp"
#include "coordinator/redis/calls/acquire_call.hpp"
#include "coordinator/redis/calls/inspect_call.hpp"
#include "coordinator/redis/calls/leave_line_call.hpp"
#include "coordinator/redis/calls/release_call.hpp"
#include "coordinator/redis/calls/renew_call.hpp"
#include "coordinator/redis/keys.hpp"
#include "redis/cluster_connection.hpp"
#include "redis/multiplexed_connection.hpp"

namespace fencelock::detail {

namespace {

std::string host_name() {
    char buf[256] = {};
    if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
    return buf;
}

std::string released_channel(std::string_view prefix, const ResourceName& resource) {
    return make_keys(prefix, resource).released;
}

}  // namespace

RedisCoordinator::RedisCoordinator(const ClientOptions& options)
    : prefix_(options.key_prefix),
      command_timeout_(options.command_timeout),
      release_notifications_(options.release_notifications),
      settings_{options.endpoint, options.connect_timeout, options.command_timeout, topology_for(options.endpoint)},
      pool_(std::make_shared<ConnectionPool>(
          [s = settings_] { return make_endpoint_connection(s, make_multiplexed_connection); }, options.pool_size)),
      holder_{host_name(), std::to_string(::getpid()), options.holder_label, random_hex_id()} {}

CoordinatorCapabilities RedisCoordinator::capabilities() const noexcept {
    // The event loop follows one server; a Cluster's redirects are the blocking connection's.
    return {.name = "Redis",
            .direct_grants = true,
            .fair_line = true,
            .release_watch = release_notifications_,
            .async_loop = !settings_.endpoint.uses_cluster(),
            .server_clock = true,
            .replica_acks = true};
}

Result<AcquireReply> RedisCoordinator::attempt(const AttemptRequest& r) {
    return acquire_once(*pool_->borrow(), prefix_, r.resource, r.owner, r.options, holder_, r.place, r.local_line,
                        r.direct);
}

Result<RenewReply> RedisCoordinator::renew(const ResourceName& resource, const OwnerToken& owner,
                                           std::chrono::milliseconds lease) {
    return renew_once(*pool_->borrow(), prefix_, resource, owner, lease);
}

// A thread of this client waiting for the lock, vouched for as alive (lib/handoff.lua), is
// named in the release: it is granted the whole lease, so it need not extend a place-bounded one.
Result<ReleaseReply> RedisCoordinator::release(const ResourceName& resource, const OwnerToken& owner) {
    const std::string channel = released_channel(prefix_, resource);
    const auto next = local_successor(channel);
    const auto successor = next ? std::optional<Successor>({next->tag, next->terms.lease, next->terms.max_hold})
                                : std::nullopt;
    const auto sent = std::chrono::steady_clock::now();
    auto reply =
        release_for_client(*pool_->borrow(), prefix_, resource, owner, &holder_, successor ? &*successor : nullptr);
    if (reply && reply->granted) reply->granted->grant.release_sent = sent;  // its TTL began after this
    return reply;
}

void RedisCoordinator::hand_over(const ResourceName& resource, const GrantMessage& grant) {
    hand_to_waiter(released_channel(prefix_, resource), grant);
}

Result<ReleaseStatus> RedisCoordinator::give_back(const ResourceName& resource, const OwnerToken& owner) {
    return release_once(*pool_->borrow(), prefix_, resource, owner);
}

Result<bool> RedisCoordinator::leave_line(const ResourceName& resource, const OwnerToken& owner) {
    return leave_line_once(*pool_->borrow(), prefix_, resource, owner);
}

Result<LockInfo> RedisCoordinator::inspect(const ResourceName& resource) {
    return inspect_once(*pool_->borrow(), prefix_, resource);
}

std::unique_ptr<WatchSeat> RedisCoordinator::watch(const ResourceName& resource, const OwnerToken& owner,
                                                   std::optional<SuccessorTerms> terms) {
    return notifier().join(released_channel(prefix_, resource), owner.str(), terms);
}

ReleaseNotifier& RedisCoordinator::notifier() {
    std::lock_guard lock(notifier_mutex_);
    if (!notifier_) notifier_ = std::make_unique<ReleaseNotifier>(settings_);
    return *notifier_;
}

std::optional<WaitLine::Named> RedisCoordinator::local_successor(const std::string& channel) {
    std::lock_guard lock(notifier_mutex_);
    if (!notifier_) return std::nullopt;
    return notifier_->successor(channel, command_timeout_);
}

// A waiter that is not in the local line any more needs nothing: it either took the lease by its
// own attempt ("already ours") or is giving up, and giving up sends leave_line, which deletes a
// lease handed to the leaver (leave_line.lua). Releasing it here instead could delete the lease
// of a waiter that just took it by its attempt.
void RedisCoordinator::hand_to_waiter(const std::string& channel, const GrantMessage& grant) {
    std::lock_guard lock(notifier_mutex_);
    if (notifier_) (void)notifier_->grant(channel, grant.owner, grant.grant);
}

bool RedisCoordinator::has_waiters(const std::string& channel) {
    std::lock_guard lock(notifier_mutex_);
    return notifier_ && notifier_->has_waiters(channel);
}

bool RedisCoordinator::has_local_waiters(const ResourceName& resource) {
    return has_waiters(released_channel(prefix_, resource));
}

bool RedisCoordinator::watching(const ResourceName& resource) {
    std::lock_guard lock(notifier_mutex_);
    return notifier_ && notifier_->subscribed(released_channel(prefix_, resource));
}

void RedisCoordinator::close_watch() noexcept {
    std::unique_ptr<ReleaseNotifier> closing;
    {
        std::lock_guard lock(notifier_mutex_);
        closing = std::move(notifier_);
    }
    // Joined outside the mutex: a release by LockAdmin's caller never waits behind it.
}

steady_time RedisCoordinator::grants_from() const noexcept { return settings_.topology->grants_from(); }

}  // namespace fencelock::detail
