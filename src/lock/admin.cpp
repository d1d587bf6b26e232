// Operations on locks: listing, audited force-release, the audit log.
#include <unistd.h>

#include <charconv>
#include <stdexcept>

#include "lock/client_impl.hpp"
#include "lock/keys.hpp"
#include "lock/protocol.hpp"
#include "lock/scripts.hpp"
#include "redis/script_runner.hpp"

namespace fencelock {
namespace {

std::string audit_key(std::string_view prefix) { return std::string(prefix) + "fencelock:audit"; }

// SCAN MATCH treats * ? [ ] \ as glob syntax: the prefix must match literally.
std::string glob_escape(std::string_view s) {
    std::string out;
    for (char c : s) {
        if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') out += '\\';
        out += c;
    }
    return out;
}

std::int64_t to_int(const std::string& s) {
    std::int64_t v = 0;
    std::from_chars(s.data(), s.data() + s.size(), v);
    return v;
}

std::unexpected<std::error_code> malformed() { return std::unexpected(make_error_code(errc::protocol_error)); }

}  // namespace

std::string_view to_string(ForceReleaseStatus s) noexcept {
    switch (s) {
        case ForceReleaseStatus::released: return "released";
        case ForceReleaseStatus::not_held: return "not_held";
        case ForceReleaseStatus::owner_mismatch: return "owner_mismatch";
        case ForceReleaseStatus::active: return "active";
    }
    return "unknown";
}

Result<std::vector<HeldLock>> LockClient::list_locks(std::string_view glob, std::size_t limit) {
    const std::string& prefix = impl_->options.key_prefix;
    const std::string head = prefix + "lock:{";
    const std::string pattern = glob_escape(head) + std::string(glob) + "}";
    auto connection = impl_->pool->borrow();
    std::vector<std::string> keys;
    std::string cursor = "0";
    do {
        auto reply = connection->command(
            std::vector<std::string_view>{"SCAN", cursor, "MATCH", pattern, "COUNT", "500", "TYPE", "hash"});
        if (!reply) return std::unexpected(reply.error());
        if (reply->kind == detail::Reply::Kind::error) return std::unexpected(detail::error_from_reply(reply->str));
        if (reply->elements.size() != 2) return malformed();
        cursor = reply->elements[0].str;
        for (auto& k : reply->elements[1].elements) keys.push_back(std::move(k.str));
    } while (cursor != "0" && keys.size() < limit);
    if (keys.size() > limit) keys.resize(limit);

    // Inspect them all in one round trip.
    std::vector<std::string> resources, fence_keys;
    std::vector<detail::ScriptCall> calls;
    for (const auto& key : keys) {
        resources.push_back(key.substr(head.size(), key.size() - head.size() - 1));
        auto resource = ResourceName::make(resources.back());
        fence_keys.push_back(resource ? detail::make_keys(prefix, *resource).fence : key);
    }
    for (std::size_t i = 0; i < keys.size(); ++i) calls.push_back({{keys[i], fence_keys[i]}, {}});
    auto results = detail::run_script_batch(*connection, detail::scripts::inspect, calls);
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

Result<ForceReleaseOutcome> LockClient::force_release(const ResourceName& resource, const ForceReleaseRequest& request) {
    if (request.reason.empty()) throw std::invalid_argument("force_release: reason must not be empty");
    if (request.operator_name.empty()) throw std::invalid_argument("force_release: operator must not be empty");
    const auto keys = detail::make_keys(impl_->options.key_prefix, resource);
    const std::string audit = audit_key(impl_->options.key_prefix);
    const std::string expected = request.expected_owner ? request.expected_owner->str() : "";
    auto reply = detail::run_script(*impl_->pool->borrow(), detail::scripts::force_release, {keys.lock, audit},
                                    {resource.str(), request.reason, request.operator_name, expected,
                                     request.even_if_active ? "1" : "0", keys.released});
    if (!reply) return std::unexpected(reply.error());
    const auto& e = reply->elements;
    if (e.empty()) return malformed();
    ForceReleaseOutcome out;
    switch (e[0].integer) {
        case 0: out.status = ForceReleaseStatus::not_held; return out;
        case 2:
            if (e.size() != 2) return malformed();
            out.status = ForceReleaseStatus::owner_mismatch;
            out.owner = e[1].str;
            return out;
        case 1:
        case 3:
            if (e.size() != 5) return malformed();
            out.status = e[0].integer == 1 ? ForceReleaseStatus::released : ForceReleaseStatus::active;
            out.owner = e[1].str;
            if (auto fence = parse_fence(e[2])) out.fence = *fence;
            else return malformed();
            out.since_renew = milliseconds(e[3].integer);
            if (e[0].integer == 1) out.audit_id = e[4].str;
            else out.lease = milliseconds(e[4].integer);
            return out;
        default: return malformed();
    }
}

Result<std::vector<AuditEntry>> LockClient::audit_log(const std::optional<ResourceName>& resource, std::size_t limit) {
    const std::string key = audit_key(impl_->options.key_prefix);
    auto connection = impl_->pool->borrow();
    std::vector<AuditEntry> entries;
    std::string end = "+";
    // Newest first, in pages, filtering by resource when asked.
    while (entries.size() < limit) {
        auto reply = connection->command(std::vector<std::string_view>{"XREVRANGE", key, end, "-", "COUNT", "200"});
        if (!reply) return std::unexpected(reply.error());
        if (reply->kind == detail::Reply::Kind::error) return std::unexpected(detail::error_from_reply(reply->str));
        if (reply->elements.empty()) break;
        for (const auto& item : reply->elements) {
            if (item.elements.size() != 2) return malformed();
            AuditEntry a;
            a.id = item.elements[0].str;
            const auto& f = item.elements[1].elements;
            for (std::size_t i = 0; i + 1 < f.size(); i += 2) {
                const std::string& name = f[i].str;
                const std::string& value = f[i + 1].str;
                if (name == "resource") a.resource = value;
                else if (name == "owner") a.owner = value;
                else if (name == "fence") a.fence = FencingToken(static_cast<std::uint64_t>(to_int(value)));
                else if (name == "reason") a.reason = value;
                else if (name == "operator") a.operator_name = value;
                else if (name == "time_ms") a.time_ms = to_int(value);
                else if (name == "since_renew_ms") a.since_renew = milliseconds(to_int(value));
                else if (name == "forced_active") a.forced_active = value == "1";
            }
            if (resource && a.resource != resource->str()) continue;
            entries.push_back(std::move(a));
            if (entries.size() == limit) break;
        }
        // Continue below the oldest id of this page ("(" = exclusive).
        end = "(" + reply->elements.back().elements[0].str;
        if (reply->elements.size() < 200) break;
    }
    return entries;
}

}  // namespace fencelock
