// The Redis coordinator's operator pages (LockAdmin's calls): SCAN for held locks and audit
// streams on every master, inspect in one round trip, force-release by script. The script
// arguments and reply shapes live in calls/.
#include <algorithm>
#include <cstdlib>
#include <functional>
#include <limits>

#include "coordinator/redis/calls/audit_page.hpp"
#include "coordinator/redis/calls/force_release_call.hpp"
#include "coordinator/redis/calls/inspect_call.hpp"
#include "coordinator/redis/calls/scan_page.hpp"
#include "coordinator/redis/keys.hpp"
#include "coordinator/redis/redis_coordinator.hpp"
#include "redis/cluster_connection.hpp"

namespace fencelock::detail {

namespace {

// Every key of `type` matching `pattern` on every master (one SCAN per master on Redis
// Cluster, since SCAN sees one node's keys), stopping once `limit` are found.
Result<std::vector<std::string>> scan_every_master(Connection& connection, std::string_view pattern,
                                                   std::string_view type, std::size_t limit) {
    auto masters = each_master(connection);
    if (!masters) return std::unexpected(masters.error());
    std::vector<std::string> keys;
    for (Connection* master : *masters) {
        std::string cursor = "0";
        do {
            auto page = scan_keys(*master, cursor, pattern, type);
            if (!page) return std::unexpected(page.error());
            cursor = std::move(page->cursor);
            for (auto& k : page->keys) keys.push_back(std::move(k));
        } while (cursor != "0" && keys.size() < limit);
        if (keys.size() >= limit) break;
    }
    if (keys.size() > limit) keys.resize(limit);
    return keys;
}

// Up to `limit` entries of `stream` (for `resource` only, when given), newest first.
Result<std::vector<AuditEntry>> read_stream(Connection& c, std::string_view stream,
                                            const std::optional<ResourceName>& resource, std::size_t limit) {
    std::vector<AuditEntry> entries;
    std::string end = "+";
    while (entries.size() < limit) {
        auto page = read_audit_page(c, stream, end);
        if (!page) return std::unexpected(page.error());
        if (page->empty()) break;
        // Continue below the oldest id of this page ("(" = exclusive).
        end = "(" + page->back().id;
        const bool last_page = page->size() < audit_page_size;
        for (auto& a : *page) {
            if (resource && a.resource != resource->str()) continue;
            entries.push_back(std::move(a));
            if (entries.size() == limit) break;
        }
        if (last_page) break;
    }
    return entries;
}

// Stream ids are "ms-seq"; entries of different streams (and nodes) are ordered by them.
std::pair<std::int64_t, std::int64_t> id_order(const std::string& id) {
    const auto dash = id.find('-');
    return {std::atoll(id.substr(0, dash).c_str()), dash == std::string::npos ? 0 : std::atoll(id.c_str() + dash + 1)};
}

}  // namespace

Result<std::vector<HeldLock>> RedisCoordinator::list_locks(std::string_view glob, std::size_t limit) {
    const std::string head = prefix_ + "lock:{";
    const std::string pattern = glob_escape(head) + std::string(glob) + "}";
    auto connection = pool_->borrow();
    auto keys = scan_every_master(*connection, pattern, "hash", limit);
    if (!keys) return std::unexpected(keys.error());

    // Inspect them all in one round trip (one per master on a cluster).
    std::vector<std::string> resources, fence_keys;
    std::vector<ScriptCall> calls;
    for (const auto& key : *keys) {
        resources.push_back(key.substr(head.size(), key.size() - head.size() - 1));
        auto resource = ResourceName::make(resources.back());
        fence_keys.push_back(resource ? make_keys(prefix_, *resource).fence : key);
    }
    for (std::size_t i = 0; i < keys->size(); ++i) calls.push_back(inspect_call((*keys)[i], fence_keys[i]));
    auto results = inspect_batch(*connection, calls);
    if (!results) return std::unexpected(results.error());
    std::vector<HeldLock> locks;
    for (std::size_t i = 0; i < keys->size(); ++i) {
        auto resource = ResourceName::make(resources[i]);
        if (!resource || !(*results)[i]) continue;  // not one of ours, or gone meanwhile
        auto info = decode_inspect(*(*results)[i]);
        if (!info) locks.push_back({*resource, HolderState{}, info.error()});  // damaged: shown, not skipped
        else if (info->holder) locks.push_back({*resource, *info->holder});
    }
    return locks;
}

Result<ForceReleaseOutcome> RedisCoordinator::force_release(const ResourceName& resource,
                                                            const ForceReleaseRequest& request) {
    return force_release_once(*pool_->borrow(), prefix_, resource, request);
}

// The entries live in one stream per resource (`audit:{R}`, written by force_release's script
// in the lock's slot) and, from before that layout, in the prefix's legacy stream: both are
// read and merged newest first.
Result<std::vector<AuditEntry>> RedisCoordinator::audit_log(const std::optional<ResourceName>& resource,
                                                            std::size_t limit) {
    auto connection = pool_->borrow();
    std::vector<AuditEntry> entries;
    auto add = [&](Connection& c, std::string_view stream) -> std::error_code {
        auto got = read_stream(c, stream, resource, limit);
        if (!got) return got.error();
        for (auto& a : *got) entries.push_back(std::move(a));
        return {};
    };
    std::vector<std::string> streams;
    if (resource) {
        streams.push_back(make_keys(prefix_, *resource).audit);
    } else {
        const std::string pattern = glob_escape(prefix_ + "audit:{") + "*}";
        auto found = scan_every_master(*connection, pattern, "stream", std::numeric_limits<std::size_t>::max());
        if (!found) return std::unexpected(found.error());
        streams = std::move(*found);
    }
    for (const auto& s : streams)
        if (auto ec = add(*connection, s)) return std::unexpected(ec);
    // The legacy stream has no hash tag: on a cluster, whichever master holds its slot.
    if (auto ec = add(*connection, legacy_audit_stream(prefix_))) return std::unexpected(ec);
    std::ranges::stable_sort(entries, std::greater{}, [](const AuditEntry& a) { return id_order(a.id); });
    if (entries.size() > limit) entries.resize(limit);
    return entries;
}

}  // namespace fencelock::detail
