// LockAdmin: the operators' calls. The script arguments and reply shapes live in calls/.
#include "fencelock/admin.hpp"

#include <stdexcept>

#include "lock/calls/audit_page.hpp"
#include "lock/calls/force_release_call.hpp"
#include "lock/calls/inspect_call.hpp"
#include "lock/calls/scan_page.hpp"
#include "lock/client_impl.hpp"
#include "lock/keys.hpp"

namespace fencelock {

std::string_view to_string(ForceReleaseStatus s) noexcept {
    switch (s) {
        case ForceReleaseStatus::released: return "released";
        case ForceReleaseStatus::not_held: return "not_held";
        case ForceReleaseStatus::owner_mismatch: return "owner_mismatch";
        case ForceReleaseStatus::active: return "active";
    }
    return "unknown";
}

LockAdmin::LockAdmin(const LockClient& client)
    : pool_(client.impl_->pool), prefix_(client.impl_->options.key_prefix) {}

Result<std::vector<HeldLock>> LockAdmin::list_locks(std::string_view glob, std::size_t limit) {
    const std::string head = prefix_ + "lock:{";
    const std::string pattern = detail::glob_escape(head) + std::string(glob) + "}";
    auto connection = pool_->borrow();
    std::vector<std::string> keys;
    std::string cursor = "0";
    do {
        auto page = detail::scan_hashes(*connection, cursor, pattern);
        if (!page) return std::unexpected(page.error());
        cursor = std::move(page->cursor);
        for (auto& k : page->keys) keys.push_back(std::move(k));
    } while (cursor != "0" && keys.size() < limit);
    if (keys.size() > limit) keys.resize(limit);

    // Inspect them all in one round trip.
    std::vector<std::string> resources, fence_keys;
    std::vector<detail::ScriptCall> calls;
    for (const auto& key : keys) {
        resources.push_back(key.substr(head.size(), key.size() - head.size() - 1));
        auto resource = ResourceName::make(resources.back());
        fence_keys.push_back(resource ? detail::make_keys(prefix_, *resource).fence : key);
    }
    for (std::size_t i = 0; i < keys.size(); ++i) calls.push_back(detail::inspect_call(keys[i], fence_keys[i]));
    auto results = detail::inspect_batch(*connection, calls);
    if (!results) return std::unexpected(results.error());
    std::vector<HeldLock> locks;
    for (std::size_t i = 0; i < keys.size(); ++i) {
        auto resource = ResourceName::make(resources[i]);
        if (!resource || !(*results)[i]) continue;  // not one of ours, or gone meanwhile
        auto info = detail::decode_inspect(*(*results)[i]);
        if (info && info->holder) locks.push_back({*resource, *info->holder});
    }
    return locks;
}

Result<ForceReleaseOutcome> LockAdmin::force_release(const ResourceName& resource, const ForceReleaseRequest& request) {
    if (request.reason.empty()) throw std::invalid_argument("force_release: reason must not be empty");
    if (request.operator_name.empty()) throw std::invalid_argument("force_release: operator must not be empty");
    return detail::force_release_once(*pool_->borrow(), prefix_, detail::audit_stream(prefix_), resource, request);
}

Result<std::vector<AuditEntry>> LockAdmin::audit_log(const std::optional<ResourceName>& resource, std::size_t limit) {
    const std::string stream = detail::audit_stream(prefix_);
    auto connection = pool_->borrow();
    std::vector<AuditEntry> entries;
    std::string end = "+";
    // Newest first, in pages, filtering by resource when asked.
    while (entries.size() < limit) {
        auto page = detail::read_audit_page(*connection, stream, end);
        if (!page) return std::unexpected(page.error());
        if (page->empty()) break;
        // Continue below the oldest id of this page ("(" = exclusive).
        end = "(" + page->back().id;
        const bool last_page = page->size() < detail::audit_page_size;
        for (auto& a : *page) {
            if (resource && a.resource != resource->str()) continue;
            entries.push_back(std::move(a));
            if (entries.size() == limit) break;
        }
        if (last_page) break;
    }
    return entries;
}

}  // namespace fencelock
