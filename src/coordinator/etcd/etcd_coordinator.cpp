#include "coordinator/etcd/etcd_coordinator.hpp"

#include <unistd.h>

#include <stdexcept>

#include "coordinator/etcd/etcd_renewal_channel.hpp"

namespace fencelock::detail::etcd {

using namespace etcdserverpb;
using std::chrono::milliseconds;
using std::chrono::seconds;

namespace {

std::string host_name() {
    char buf[256] = {};
    if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown";
    return buf;
}

std::int64_t wall_ms() {
    return std::chrono::duration_cast<milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

FencingToken fence_of(std::int64_t revision) { return FencingToken(static_cast<std::uint64_t>(revision)); }

// The first key of `range` by create revision: the holder.
void add_first_of(google::protobuf::RepeatedPtrField<RequestOp>& ops, const KeyRange& range) {
    auto* first = ops.Add()->mutable_request_range();
    first->set_key(range.begin);
    first->set_range_end(range.end);
    first->set_limit(1);
    first->set_sort_target(RangeRequest::CREATE);
    first->set_sort_order(RangeRequest::ASCEND);
}

}  // namespace

EtcdCoordinator::EtcdCoordinator(const ClientOptions& options)
    : settings_{.members = options.endpoint.etcd_members,
                .user = options.endpoint.user,
                .password = options.endpoint.password,
                .connect_timeout = options.connect_timeout,
                .command_timeout = options.command_timeout},
      keys_(options.key_prefix),
      holder_meta_{.pid = ::getpid(), .host = host_name(), .label = options.holder_label},
      rpc_(settings_) {}

CoordinatorCapabilities EtcdCoordinator::capabilities() const noexcept {
    // Waiters poll (no release watch yet); etcd's leases are whole seconds, 2 s at least.
    return {.name = "etcd", .lease_step = seconds(1), .min_lease = min_lease};
}

Result<AcquireReply> EtcdCoordinator::attempt(const AttemptRequest& r) {
    const auto sent = std::chrono::steady_clock::now();
    const std::string key = keys_.lock_key(r.resource, r.owner);
    const KeyRange range = keys_.lock_range(r.resource);
    auto lease = rpc_.lease_grant(std::chrono::duration_cast<seconds>(r.options.lease).count());
    if (!lease) return std::unexpected(lease.error());
    const auto give_up_lease = [&] { (void)rpc_.lease_revoke(lease->id()); };

    LeaseValue value = holder_meta_;
    value.acquired_ms = wall_ms();
    value.lease_ms = r.options.lease.count();
    value.max_hold_ms = r.options.max_hold.count();

    // Only when no key is in R's range (a range compare holds for every key in it, and for none
    // when it is empty): put ours on the new lease, and touch the fence key in the same revision.
    TxnRequest txn;
    auto* empty = txn.add_compare();
    empty->set_key(range.begin);
    empty->set_range_end(range.end);
    empty->set_target(Compare::CREATE);
    empty->set_result(Compare::EQUAL);
    empty->set_create_revision(0);
    auto* put = txn.add_success()->mutable_request_put();
    put->set_key(key);
    put->set_value(encode_lease_value(value));
    put->set_lease(lease->id());
    txn.add_success()->mutable_request_put()->set_key(keys_.fence_key(r.resource));
    txn.add_failure()->mutable_request_range()->set_key(key);
    add_first_of(*txn.mutable_failure(), range);

    auto reply = rpc_.txn(txn, Effect::write);
    if (!reply) {
        // Granted or not, revoking the new lease leaves nothing: a grant it carried is gone with
        // it, unused, and the retry (same owner) starts afresh.
        give_up_lease();
        return std::unexpected(reply.error());
    }
    if (reply->succeeded()) {
        book_->add(key, {.lease_id = lease->id(), .max_hold_ends = sent + r.options.max_hold});
        return AcquireReply{.acquired = true, .fence = fence_of(reply->header().revision()), .ttl = r.options.lease};
    }
    give_up_lease();

    const auto& mine = reply->responses(0).response_range();
    if (mine.kvs_size() > 0) {
        // Already ours: an earlier attempt's reply was lost. Its lease, not this one's, holds the
        // key; its TTL left is read now, after this attempt was sent, so it bounds safe-until.
        Holder held;
        held.key = key;
        held.owner = r.owner.str();
        held.fence = mine.kvs(0).create_revision();
        held.lease_id = mine.kvs(0).lease();
        auto alive = read_ttl(held);
        if (!alive) return std::unexpected(alive.error());
        if (*alive) {
            const auto recorded = decode_lease_value(mine.kvs(0).value());
            const auto held_for = recorded ? milliseconds(wall_ms() - recorded->acquired_ms) : milliseconds(0);
            book_->add(key, {.lease_id = held.lease_id, .max_hold_ends = sent + r.options.max_hold - held_for});
            return AcquireReply{.acquired = true, .fence = fence_of(held.fence), .ttl = held.ttl, .reacquired = true};
        }
    }
    AcquireReply refused;
    const auto& first = reply->responses(1).response_range();
    if (first.kvs_size() > 0) refused.seen_fence = fence_of(first.kvs(0).create_revision());
    return refused;
}

Result<RenewReply> EtcdCoordinator::renew(const ResourceName& resource, const OwnerToken& owner, milliseconds) {
    // etcd keeps a lease alive for the TTL it was granted with: the lease asked here is that one.
    const std::string key = keys_.lock_key(resource, owner);
    return std::move(renew_leases(rpc_, *book_, std::span(&key, 1)).front());
}

Result<ReleaseReply> EtcdCoordinator::release(const ResourceName& resource, const OwnerToken& owner) {
    auto status = give_back(resource, owner);
    if (!status) return std::unexpected(status.error());
    return ReleaseReply{.status = *status};
}

Result<ReleaseStatus> EtcdCoordinator::give_back(const ResourceName& resource, const OwnerToken& owner) {
    const std::string key = keys_.lock_key(resource, owner);
    TxnRequest txn;
    auto* ours = txn.add_compare();
    ours->set_key(key);
    ours->set_target(Compare::CREATE);
    ours->set_result(Compare::GREATER);
    ours->set_create_revision(0);
    txn.add_success()->mutable_request_delete_range()->set_key(key);
    add_first_of(*txn.mutable_failure(), keys_.lock_range(resource));
    auto reply = rpc_.txn(txn, Effect::write);
    if (!reply) return std::unexpected(reply.error());
    const auto booked = book_->find(key);
    book_->remove(key);
    if (reply->succeeded()) {
        // The etcd lease has nothing left to keep: revoked, or it runs out on its own.
        if (booked) (void)rpc_.lease_revoke(booked->lease_id);
        return ReleaseStatus::released;
    }
    return reply->responses(0).response_range().kvs_size() > 0 ? ReleaseStatus::not_owner : ReleaseStatus::not_held;
}

Result<bool> EtcdCoordinator::read_ttl(Holder& holder) {
    auto ttl = rpc_.lease_time_to_live(holder.lease_id);
    if (!ttl) return std::unexpected(ttl.error());
    // TTL -1: the lease is gone, and its keys are being deleted with it.
    if (ttl->ttl() <= 0) return false;
    holder.ttl = seconds(ttl->ttl());
    holder.granted = seconds(ttl->grantedttl());
    return true;
}

Result<std::optional<EtcdCoordinator::Holder>> EtcdCoordinator::holder_of(const ResourceName& resource) {
    TxnRequest txn;
    add_first_of(*txn.mutable_success(), keys_.lock_range(resource));
    auto reply = rpc_.txn(txn, Effect::read);
    if (!reply) return std::unexpected(reply.error());
    const auto& first = reply->responses(0).response_range();
    if (first.kvs_size() == 0) return std::nullopt;
    const auto& kv = first.kvs(0);
    auto parts = keys_.parse_lock_key(kv.key());
    Holder holder;
    holder.key = kv.key();
    holder.owner = parts ? parts->owner : std::string();
    holder.fence = kv.create_revision();
    holder.lease_id = kv.lease();
    holder.value = decode_lease_value(kv.value());
    auto alive = read_ttl(holder);
    if (!alive) return std::unexpected(alive.error());
    if (!*alive) return std::nullopt;
    return holder;
}

Result<LockInfo> EtcdCoordinator::inspect(const ResourceName& resource) {
    RangeRequest fence;
    fence.set_key(keys_.fence_key(resource));
    auto last = rpc_.range(fence);
    if (!last) return std::unexpected(last.error());
    auto holder = holder_of(resource);
    if (!holder) return std::unexpected(holder.error());
    LockInfo info;
    if (last->kvs_size() > 0) info.last_fence = fence_of(last->kvs(0).mod_revision());
    if (*holder) info.holder = state_of(**holder);
    return info;
}

HolderState EtcdCoordinator::state_of(const Holder& h) {
    HolderState state;
    state.owner = h.owner;
    state.fence = fence_of(h.fence);
    state.ttl = h.ttl;
    state.lease = h.granted;
    // A keep-alive resets the TTL to the granted one: what is gone of it is the time since.
    state.since_renew = h.granted - h.ttl;
    if (h.value) {
        // The acquiring client's wall clock against this one's: for people, not for safety.
        state.held_for = milliseconds(wall_ms() - h.value->acquired_ms);
        state.max_hold_left = milliseconds(h.value->max_hold_ms) - state.held_for;
        state.host = h.value->host;
        state.pid = h.value->pid;
        state.label = h.value->label;
    }
    return state;
}

std::unique_ptr<WatchSeat> EtcdCoordinator::watch(const ResourceName&, const OwnerToken&,
                                                  std::optional<SuccessorTerms>) {
    // capabilities().release_watch is false: the drivers never ask.
    throw std::logic_error("the etcd coordinator has no release watch");
}

}  // namespace fencelock::detail::etcd
