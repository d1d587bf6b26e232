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
                .tls = options.endpoint.tls,
                .connect_timeout = options.connect_timeout,
                .command_timeout = options.command_timeout},
      keys_(options.key_prefix),
      holder_meta_{.pid = ::getpid(), .host = host_name(), .label = options.holder_label},
      command_timeout_(options.command_timeout),
      release_notifications_(options.release_notifications),
      rpc_(settings_) {}

CoordinatorCapabilities EtcdCoordinator::capabilities() const noexcept {
    // Waiters hear deletes through a Watch; etcd's leases are whole seconds, 2 s at least.
    return {.name = "etcd", .release_watch = release_notifications_, .lease_step = seconds(1), .min_lease = min_lease};
}

Result<AcquireReply> EtcdCoordinator::attempt(const AttemptRequest& r) {
    const auto sent = std::chrono::steady_clock::now();
    const std::string key = keys_.lock_key(r.resource, r.owner);
    const KeyRange range = keys_.lock_range(r.resource);
    const auto refused_by = [](const RangeResponse& first) {
        AcquireReply refused;
        if (first.kvs_size() > 0) {
            refused.seen_fence = fence_of(first.kvs(0).create_revision());
            // The holder's lease length bounds what its TTL has left (read without another call):
            // a waiter that hears no delete tries again by then.
            if (const auto value = decode_lease_value(first.kvs(0).value()))
                refused.ttl = milliseconds(value->lease_ms);
        }
        return refused;
    };

    // A linearizable read first: a lock that is held costs a waiter no write (a lease grant and
    // a transaction are consensus writes, and a polling waiter would send both every time).
    TxnRequest look;
    look.add_success()->mutable_request_range()->set_key(key);
    add_first_of(*look.mutable_success(), range);
    auto seen = rpc_.txn(look, Effect::read);
    if (!seen) return std::unexpected(seen.error());
    if (seen->responses(0).response_range().kvs_size() > 0)
        return adopt(r, key, seen->responses(0).response_range().kvs(0), sent);
    if (seen->responses(1).response_range().kvs_size() > 0) return refused_by(seen->responses(1).response_range());

    auto lease = rpc_.lease_grant(std::chrono::duration_cast<seconds>(r.options.lease).count());
    if (!lease) return std::unexpected(lease.error());
    LeaseValue value = holder_meta_;
    value.acquired_ms = wall_ms();
    value.lease_ms = r.options.lease.count();
    value.max_hold_ms = r.options.max_hold.count();

    // Only when R's range is empty (a CREATE compare over a range holds when every key in it has
    // create revision 0, and etcd compares an empty range as one such key): put ours on the new
    // lease, and touch the fence key in the same revision.
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
    // An error may hide a grant. The lease is not revoked: a revoke whose own outcome is unknown
    // could land after the retry adopted the grant. The retry (same owner) finds the key and
    // adopts it, and an acquisition that gives up releases it (lease/acquire_loop.hpp).
    if (!reply) return std::unexpected(reply.error());
    if (reply->succeeded()) {
        book_->add(key, {.lease_id = lease->id(), .max_hold_ends = sent + r.options.max_hold});
        return AcquireReply{.acquired = true, .fence = fence_of(reply->header().revision()), .ttl = r.options.lease};
    }
    (void)rpc_.lease_revoke(lease->id());  // nothing was put on it
    if (reply->responses(0).response_range().kvs_size() > 0)
        return adopt(r, key, reply->responses(0).response_range().kvs(0), sent);
    return refused_by(reply->responses(1).response_range());
}

Result<AcquireReply> EtcdCoordinator::adopt(const AttemptRequest& r, const std::string& key,
                                            const mvccpb::KeyValue& mine, steady_time sent) {
    // Already ours: an earlier attempt's reply was lost. Its lease holds the key. Max hold counts
    // from that acquisition as its key records it (another host's wall clock against ours: a
    // skew between them moves the deadline by as much).
    const auto recorded = decode_lease_value(mine.value());
    const auto held_for = recorded ? milliseconds(wall_ms() - recorded->acquired_ms) : milliseconds(0);
    if (!book_->find(key))
        book_->add(key, {.lease_id = mine.lease(), .max_hold_ends = sent + r.options.max_hold - held_for});
    // Renewed now, after this attempt was sent (a keep-alive, then the key checked on that
    // lease), so that the caller gets a whole lease whose safe-until counts from `sent`.
    auto renewed = std::move(renew_leases(rpc_, *book_, std::span(&key, 1), command_timeout_).front());
    if (!renewed) return std::unexpected(renewed.error());
    if (renewed->status != RenewStatus::renewed) {
        AcquireReply refused;
        refused.seen_fence = fence_of(mine.create_revision());
        return refused;
    }
    return AcquireReply{
        .acquired = true, .fence = fence_of(mine.create_revision()), .ttl = renewed->ttl, .reacquired = true};
}

Result<RenewReply> EtcdCoordinator::renew(const ResourceName& resource, const OwnerToken& owner, milliseconds) {
    // etcd keeps a lease alive for the TTL it was granted with: the lease asked here is that one.
    const std::string key = keys_.lock_key(resource, owner);
    return std::move(renew_leases(rpc_, *book_, std::span(&key, 1), command_timeout_).front());
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
    if (booked) book_->remove_if(key, booked->lease_id);
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
    // TTL -1: the lease is gone, and its keys are being deleted with it. 0 is a live lease with
    // less than a second left (etcd truncates the seconds).
    if (ttl->ttl() < 0) return false;
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

std::unique_ptr<WatchSeat> EtcdCoordinator::watch(const ResourceName& resource, const OwnerToken& owner,
                                                  std::optional<SuccessorTerms>) {
    std::lock_guard lock(watch_mutex_);
    if (!watch_) watch_ = std::make_unique<EtcdReleaseWatch>(settings_, keys_);
    return watch_->join(resource, owner.str());
}

bool EtcdCoordinator::has_local_waiters(const ResourceName& resource) {
    std::lock_guard lock(watch_mutex_);
    return watch_ && watch_->has_waiters(resource);
}

bool EtcdCoordinator::watching(const ResourceName& resource) {
    std::lock_guard lock(watch_mutex_);
    return watch_ && watch_->watching(resource);
}

void EtcdCoordinator::close_watch() noexcept {
    std::unique_ptr<EtcdReleaseWatch> closing;
    {
        std::lock_guard lock(watch_mutex_);
        closing = std::move(watch_);
    }
}

}  // namespace fencelock::detail::etcd
