#include "coordinator/etcd/etcd_renewal_channel.hpp"

#include "coordinator/etcd/etcd_coordinator.hpp"
#include "fencelock/error.hpp"

namespace fencelock::detail::etcd {

using namespace etcdserverpb;
using std::chrono::milliseconds;
using std::chrono::seconds;

namespace {

RenewReply reply_of(RenewStatus status) {
    RenewReply reply;
    reply.status = status;
    return reply;
}

// What the keys at `indexes` of `keys` hold now, by linearizable read-only transactions of at
// most max_txn_ops reads each (etcd refuses larger ones); with the lowest Raft term they were
// read in.
struct KeysRead {
    std::vector<std::optional<mvccpb::KeyValue>> found;
    std::uint64_t lowest_term = 0;
};
Result<KeysRead> read_keys(EtcdRpc& rpc, std::span<const std::string> keys, const std::vector<std::size_t>& indexes) {
    KeysRead out;
    out.found.resize(indexes.size());
    for (std::size_t begin = 0; begin < indexes.size(); begin += EtcdRpc::max_txn_ops) {
        const std::size_t end = std::min(indexes.size(), begin + EtcdRpc::max_txn_ops);
        TxnRequest txn;
        for (std::size_t j = begin; j < end; ++j) txn.add_success()->mutable_request_range()->set_key(keys[indexes[j]]);
        auto read = rpc.txn(txn, Effect::read);
        if (!read) return std::unexpected(read.error());
        const std::uint64_t term = read->header().raft_term();
        out.lowest_term = begin == 0 ? term : std::min(out.lowest_term, term);
        for (std::size_t j = begin; j < end; ++j) {
            const auto& range = read->responses(static_cast<int>(j - begin)).response_range();
            if (range.kvs_size() > 0) out.found[j] = range.kvs(0);
        }
    }
    return out;
}

}  // namespace

std::vector<Result<RenewReply>> renew_leases(EtcdRpc& rpc, LeaseBook& book, std::span<const std::string> keys,
                                             std::chrono::milliseconds command_timeout) {
    const auto now = std::chrono::steady_clock::now();
    std::vector<Result<RenewReply>> replies(keys.size(), reply_of(RenewStatus::not_owner));
    std::vector<std::optional<BookedLease>> booked(keys.size());

    // A lease this client did not grant (another process renewing by owner token) has no lease
    // id here: its key names it, and max hold counts from the acquisition its value records (that
    // host's wall clock against this one's).
    std::vector<std::size_t> unknown;
    for (std::size_t i = 0; i < keys.size(); ++i) {
        booked[i] = book.find(keys[i]);
        if (!booked[i]) unknown.push_back(i);
    }
    if (!unknown.empty()) {
        auto found = read_keys(rpc, keys, unknown);
        if (!found) return {keys.size(), std::unexpected(found.error())};
        const auto wall_now =
            std::chrono::duration_cast<milliseconds>(std::chrono::system_clock::now().time_since_epoch());
        for (std::size_t j = 0; j < unknown.size(); ++j) {
            const auto& kv = found->found[j];
            if (!kv) continue;
            const auto value = decode_lease_value(kv->value());
            const auto left = value ? milliseconds(value->acquired_ms + value->max_hold_ms) - wall_now
                                    : milliseconds(0);
            booked[unknown[j]] = BookedLease{kv->lease(), now + left};
        }
    }

    std::vector<std::int64_t> ids;
    std::vector<std::size_t> kept;
    for (std::size_t i = 0; i < keys.size(); ++i) {
        if (!booked[i]) continue;  // no key: not the owner
        // A keep-alive sent now may land up to a command timeout later: none may land past max hold.
        if (now + command_timeout >= booked[i]->max_hold_ends) {
            replies[i] = reply_of(RenewStatus::max_hold_exceeded);
            continue;
        }
        ids.push_back(booked[i]->lease_id);
        kept.push_back(i);
    }
    if (ids.empty()) return replies;
    auto alive = rpc.keep_alive(ids);
    if (!alive) return {keys.size(), std::unexpected(alive.error())};

    // Then the keys, each on the lease just kept alive.
    auto found = read_keys(rpc, keys, kept);
    if (!found) return {keys.size(), std::unexpected(found.error())};
    // A leader that lost its majority and has not stepped down yet may still renew in its own
    // lessor, while the new leader counts the lease from its own start: a keep-alive answered in
    // another term than the check's is no confirmation (the keeper retries it).
    if (alive->lowest_term != found->lowest_term || alive->highest_term != found->lowest_term) {
        remember_error_detail(make_error_code(errc::not_master),
                              rpc.where() + ": the leader changed between a keep-alive and its check (terms " +
                                  std::to_string(alive->lowest_term) + ".." + std::to_string(alive->highest_term) +
                                  " and " + std::to_string(found->lowest_term) + ")");
        for (const std::size_t i : kept) replies[i] = std::unexpected(make_error_code(errc::not_master));
        return replies;
    }
    for (std::size_t j = 0; j < kept.size(); ++j) {
        const std::size_t i = kept[j];
        const auto& kv = found->found[j];
        if (alive->ttls[j] <= 0 || !kv || kv->lease() != ids[j]) {
            book.remove_if(keys[i], ids[j]);
            continue;
        }
        RenewReply renewed = reply_of(RenewStatus::renewed);
        renewed.fence = FencingToken(static_cast<std::uint64_t>(kv->create_revision()));
        renewed.ttl = seconds(alive->ttls[j]);
        replies[i] = renewed;
    }
    return replies;
}

RenewBatch EtcdRenewalChannel::renew_batch(std::span<const RenewItem> items) {
    std::vector<std::string> keys;
    keys.reserve(items.size());
    for (const auto& item : items) keys.push_back(keys_.lock_key(item.address, item.owner));
    return {.replies = renew_leases(rpc_, *book_, keys, command_timeout_), .server_time = std::nullopt};
}

std::unique_ptr<RenewalChannel> EtcdCoordinator::renewal_channel() {
    return std::make_unique<EtcdRenewalChannel>(settings_, keys_, book_);
}

}  // namespace fencelock::detail::etcd
