// The etcd coordinator's operator pages: list (one range read over every lease key, the holder of
// each resource its first key by create revision), force-release (the holder's key deleted and
// an audit key put in one transaction, only if that same key is still there), and the audit log
// (the audit keys newest first, by create revision).
#include <fnmatch.h>

#include <map>

#include "common/random_id.hpp"
#include "coordinator/etcd/etcd_coordinator.hpp"
#include "fencelock/error.hpp"

namespace fencelock::detail::etcd {

using namespace etcdserverpb;
using std::chrono::milliseconds;

namespace {

std::int64_t wall_ms() {
    return std::chrono::duration_cast<milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// `v1 <time_ms> <fence> <since_renew_ms> <forced 0|1> <resource> <owner> <operator> <reason>`,
// the resource and the operator escaped (no spaces), the reason all that follows.
std::string encode_audit(const AuditEntry& e) {
    return "v1 " + std::to_string(e.time_ms) + " " + std::to_string(e.fence.value()) + " " +
           std::to_string(e.since_renew.count()) + " " + (e.forced_active ? "1" : "0") + " " +
           escape_resource(e.resource) + " " + e.owner + " " + escape_resource(e.operator_name) + " " + e.reason;
}

std::optional<AuditEntry> decode_audit(std::string_view text) {
    const auto split = split_fields(text, 8);
    if (!split || split->fields[0] != "v1") return std::nullopt;
    std::vector<std::string> fields(split->fields.begin(), split->fields.end());
    AuditEntry e;
    try {
        e.time_ms = std::stoll(fields[1]);
        e.fence = FencingToken(std::stoull(fields[2]));
        e.since_renew = milliseconds(std::stoll(fields[3]));
    } catch (const std::exception&) {
        return std::nullopt;
    }
    e.forced_active = fields[4] == "1";
    auto resource = unescape_resource(fields[5]);
    auto op = unescape_resource(fields[7]);
    if (!resource || !op) return std::nullopt;
    e.resource = std::move(*resource);
    e.owner = fields[6];
    e.operator_name = std::move(*op);
    e.reason = std::string(split->rest);
    return e;
}

}  // namespace

Result<std::vector<HeldLock>> EtcdCoordinator::list_locks(std::string_view glob, std::size_t limit) {
    const KeyRange all = keys_.all_locks();
    RangeRequest request;
    request.set_key(all.begin);
    request.set_range_end(all.end);
    auto found = rpc_.range(request);
    if (!found) return std::unexpected(found.error());
    // The holder of each resource: its key with the smallest create revision.
    std::map<std::string, const mvccpb::KeyValue*> holders;
    for (const auto& kv : found->kvs()) {
        auto parts = keys_.parse_lock_key(kv.key());
        if (!parts) continue;
        const std::string pattern(glob);
        if (::fnmatch(pattern.c_str(), parts->resource.c_str(), 0) != 0) continue;
        auto [it, added] = holders.try_emplace(parts->resource, &kv);
        if (!added && kv.create_revision() < it->second->create_revision()) it->second = &kv;
    }
    std::vector<HeldLock> out;
    for (const auto& [name, kv] : holders) {
        if (out.size() >= limit) break;
        auto resource = ResourceName::make(name);
        if (!resource) continue;
        Holder holder;
        holder.key = kv->key();
        holder.owner = keys_.parse_lock_key(kv->key())->owner;
        holder.fence = kv->create_revision();
        holder.lease_id = kv->lease();
        holder.value = decode_lease_value(kv->value());
        auto alive = read_ttl(holder);
        if (!alive) return std::unexpected(alive.error());
        if (!*alive) continue;
        out.push_back(HeldLock{.resource = std::move(*resource), .holder = state_of(holder), .unreadable = {}});
    }
    return out;
}

Result<ForceReleaseOutcome> EtcdCoordinator::force_release(const ResourceName& resource,
                                                           const ForceReleaseRequest& request) {
    auto found = holder_of(resource);
    if (!found) return std::unexpected(found.error());
    ForceReleaseOutcome outcome;
    if (!*found) return outcome;  // not_held
    const Holder& h = **found;
    outcome.owner = h.owner;
    outcome.fence = FencingToken(static_cast<std::uint64_t>(h.fence));
    outcome.since_renew = h.granted - h.ttl;
    if (request.expected_owner && request.expected_owner->str() != h.owner) {
        outcome.status = ForceReleaseStatus::owner_mismatch;
        return outcome;
    }
    // etcd reads a lease's TTL in whole seconds, rounded down, and a keep-alive may land between
    // this read and the delete: a key whose lease etcd still has may have a live holder. Only a
    // forced release deletes it (etcd deletes a key whose lease is gone by itself).
    if (!request.even_if_active) {
        outcome.status = ForceReleaseStatus::active;
        outcome.lease = h.granted;
        return outcome;
    }
    AuditEntry entry;
    entry.resource = resource.str();
    entry.owner = h.owner;
    entry.fence = outcome.fence;
    entry.reason = request.reason;
    entry.operator_name = request.operator_name;
    entry.time_ms = wall_ms();
    entry.since_renew = outcome.since_renew;
    entry.forced_active = request.even_if_active;
    // Only that holder's key, as it was read: a lease taken since is not this operator's call.
    TxnRequest txn;
    auto* same = txn.add_compare();
    same->set_key(h.key);
    same->set_target(Compare::CREATE);
    same->set_result(Compare::EQUAL);
    same->set_create_revision(h.fence);
    txn.add_success()->mutable_request_delete_range()->set_key(h.key);
    auto* audit = txn.add_success()->mutable_request_put();
    audit->set_key(keys_.audit_key(random_hex_id()));
    audit->set_value(encode_audit(entry));
    auto reply = rpc_.txn(txn, Effect::write);
    if (!reply) return std::unexpected(reply.error());
    if (!reply->succeeded()) return ForceReleaseOutcome{};  // not_held: gone since it was read
    outcome.status = ForceReleaseStatus::released;
    outcome.audit_id = std::to_string(reply->header().revision());
    return outcome;
}

Result<std::vector<AuditEntry>> EtcdCoordinator::audit_log(const std::optional<ResourceName>& resource,
                                                           std::size_t limit) {
    const KeyRange all = keys_.all_audit();
    RangeRequest request;
    request.set_key(all.begin);
    request.set_range_end(all.end);
    request.set_sort_target(RangeRequest::CREATE);
    request.set_sort_order(RangeRequest::DESCEND);
    if (!resource) request.set_limit(static_cast<std::int64_t>(limit));
    auto found = rpc_.range(request);
    if (!found) return std::unexpected(found.error());
    std::vector<AuditEntry> out;
    for (const auto& kv : found->kvs()) {
        if (out.size() >= limit) break;
        auto entry = decode_audit(kv.value());
        if (!entry || (resource && entry->resource != resource->str())) continue;
        entry->id = std::to_string(kv.create_revision());
        out.push_back(std::move(*entry));
    }
    return out;
}

}  // namespace fencelock::detail::etcd
