#include "coordinator/redis/calls/audit_page.hpp"

#include <charconv>

#include "coordinator/redis/calls/reply_fields.hpp"

namespace fencelock::detail {
namespace {

// The script wrote these values itself; one that does not parse reads as 0, as always.
std::int64_t to_int(const std::string& s) {
    std::int64_t v = 0;
    std::from_chars(s.data(), s.data() + s.size(), v);
    return v;
}

constexpr std::size_t id_at = 0, fields_at = 1, item_size = 2;

void read_field(AuditEntry& a, const std::string& name, const std::string& value) {
    if (name == "resource") a.resource = value;
    else if (name == "owner") a.owner = value;
    else if (name == "fence") a.fence = FencingToken(static_cast<std::uint64_t>(to_int(value)));
    else if (name == "reason") a.reason = value;
    else if (name == "operator") a.operator_name = value;
    else if (name == "time_ms") a.time_ms = to_int(value);
    else if (name == "since_renew_ms") a.since_renew = std::chrono::milliseconds(to_int(value));
    else if (name == "forced_active") a.forced_active = value == "1";
}

}  // namespace

std::string legacy_audit_stream(std::string_view prefix) { return std::string(prefix) + "fencelock:audit"; }

std::expected<std::vector<AuditEntry>, std::error_code> decode_audit_page(const Reply& reply) {
    if (reply.kind == Reply::Kind::error) return std::unexpected(error_from_reply(reply.str));
    std::vector<AuditEntry> entries;
    for (const auto& item : reply.elements) {
        if (item.elements.size() != item_size) return malformed_reply();
        AuditEntry a;
        a.id = item.elements[id_at].str;
        const auto& f = item.elements[fields_at].elements;
        for (std::size_t i = 0; i + 1 < f.size(); i += 2) read_field(a, f[i].str, f[i + 1].str);
        entries.push_back(std::move(a));
    }
    return entries;
}

std::expected<std::vector<AuditEntry>, std::error_code> read_audit_page(Connection& c, std::string_view stream,
                                                                        std::string_view end) {
    const std::string count = std::to_string(audit_page_size);
    auto reply = c.command(std::vector<std::string_view>{"XREVRANGE", stream, end, "-", "COUNT", count});
    if (!reply) return std::unexpected(reply.error());
    return decode_audit_page(*reply);
}

}  // namespace fencelock::detail
