#pragma once
// Reading the audit stream that force_release.lua appends to, one XREVRANGE page at a time
// (entry fields as the script writes them: resource, owner, fence, reason, operator, time_ms,
// since_renew_ms, forced_active).
#include <expected>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "fencelock/admin_records.hpp"
#include "redis/connection.hpp"
#include "redis/reply.hpp"

namespace fencelock::detail {

/// Entries a page asks for; a shorter page is the stream's last.
inline constexpr std::size_t audit_page_size = 200;

/// The one audit stream of a key prefix that fencelock wrote before the audit moved next to
/// each resource (`audit:{R}`, see keys.hpp, so force_release's script can write it on Redis
/// Cluster): still read, never written.
std::string legacy_audit_stream(std::string_view prefix);

/// An XREVRANGE reply: {{id, {field, value, ...}}, ...}, newest first.
std::expected<std::vector<AuditEntry>, std::error_code> decode_audit_page(const Reply& reply);

/// Up to audit_page_size entries of `stream`, newest first, from `end` down ("+" for the
/// newest; "(" + id for the ones below id).
std::expected<std::vector<AuditEntry>, std::error_code> read_audit_page(Connection& c, std::string_view stream,
                                                                        std::string_view end);

}  // namespace fencelock::detail
