#include "coordinator/etcd/etcd_renewal_channel.hpp"

#include "coordinator/etcd/etcd_coordinator.hpp"

namespace fencelock::detail::etcd {

using namespace etcdserverpb;
using std::chrono::milliseconds;
using std::chrono::seconds;

namespace {

void add_range(TxnRequest& txn, const std::string& key) { txn.add_success()->mutable_request_range()->set_key(key); }

RenewReply reply_of(RenewStatus status) {
    RenewReply reply;
    reply.status = status;
    return reply;
}

}  // namespace

std::vector<Result<RenewReply>> renew_leases(EtcdRpc& rpc, LeaseBook& book, std::span<const std::string> keys) {
    const auto now = std::chrono::steady_clock::now();
    std::vector<Result<RenewReply>> replies(keys.size(), reply_of(RenewStatus::not_owner));
    std::vector<std::optional<BookedLease>> booked(keys.size());

    // A lease this client did not grant (another client's, or one lost from the book) has no
    // lease id here: its key names it.
    TxnRequest lookup;
    std::vector<std::size_t> looked_up;
    for (std::size_t i = 0; i < keys.size(); ++i) {
        booked[i] = book.find(keys[i]);
        if (!booked[i]) {
            add_range(lookup, keys[i]);
            looked_up.push_back(i);
        }
    }
    if (!looked_up.empty()) {
        auto found = rpc.txn(lookup, Effect::read);
        if (!found) return {keys.size(), std::unexpected(found.error())};
        for (std::size_t j = 0; j < looked_up.size(); ++j) {
            const auto& range = found->responses(static_cast<int>(j)).response_range();
            // Without the book, max hold counts from the acquisition the key's value records.
            if (range.kvs_size() == 0) continue;
            const auto value = decode_lease_value(range.kvs(0).value());
            const auto wall_now =
                std::chrono::duration_cast<milliseconds>(std::chrono::system_clock::now().time_since_epoch());
            const auto left = value ? milliseconds(value->acquired_ms + value->max_hold_ms) - wall_now
                                    : milliseconds(0);
            booked[looked_up[j]] = BookedLease{range.kvs(0).lease(), now + left};
        }
    }

    std::vector<std::int64_t> ids;
    std::vector<std::size_t> kept;
    for (std::size_t i = 0; i < keys.size(); ++i) {
        if (!booked[i]) continue;  // no key: not the owner
        if (now >= booked[i]->max_hold_ends) {
            replies[i] = reply_of(RenewStatus::max_hold_exceeded);
            continue;
        }
        ids.push_back(booked[i]->lease_id);
        kept.push_back(i);
    }
    if (ids.empty()) return replies;
    auto ttls = rpc.keep_alive(ids);
    if (!ttls) return {keys.size(), std::unexpected(ttls.error())};

    // Then the keys, each on the lease just kept alive.
    TxnRequest check;
    for (const std::size_t i : kept) add_range(check, keys[i]);
    auto found = rpc.txn(check, Effect::read);
    if (!found) return {keys.size(), std::unexpected(found.error())};
    for (std::size_t j = 0; j < kept.size(); ++j) {
        const std::size_t i = kept[j];
        const auto& range = found->responses(static_cast<int>(j)).response_range();
        const bool held = (*ttls)[j] > 0 && range.kvs_size() > 0 && range.kvs(0).lease() == ids[j];
        if (!held) {
            book.remove(keys[i]);
            continue;
        }
        RenewReply renewed = reply_of(RenewStatus::renewed);
        renewed.fence = FencingToken(static_cast<std::uint64_t>(range.kvs(0).create_revision()));
        renewed.ttl = seconds((*ttls)[j]);
        replies[i] = renewed;
    }
    return replies;
}

RenewBatch EtcdRenewalChannel::renew_batch(std::span<const RenewItem> items) {
    std::vector<std::string> keys;
    keys.reserve(items.size());
    for (const auto& item : items) keys.push_back(keys_.lock_key(item.address, item.owner));
    return {.replies = renew_leases(rpc_, *book_, keys), .server_time = std::nullopt};
}

std::unique_ptr<RenewalChannel> EtcdCoordinator::renewal_channel() {
    return std::make_unique<EtcdRenewalChannel>(settings_, keys_, book_);
}

}  // namespace fencelock::detail::etcd
