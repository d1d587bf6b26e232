#include "coordinator/redis/calls/scan_page.hpp"

#include "coordinator/redis/calls/reply_fields.hpp"

namespace fencelock::detail {
namespace {
constexpr std::size_t cursor_at = 0, keys_at = 1, reply_size = 2;
}  // namespace

std::expected<ScanPage, std::error_code> decode_scan_page(Reply reply) {
    if (reply.kind == Reply::Kind::error) return std::unexpected(error_from_reply(reply.str));
    if (reply.elements.size() != reply_size) return malformed_reply();
    ScanPage page{std::move(reply.elements[cursor_at].str), {}};
    for (auto& key : reply.elements[keys_at].elements) page.keys.push_back(std::move(key.str));
    return page;
}

std::expected<ScanPage, std::error_code> scan_keys(Connection& c, std::string_view cursor, std::string_view pattern,
                                                   std::string_view type) {
    auto reply =
        c.command(std::vector<std::string_view>{"SCAN", cursor, "MATCH", pattern, "COUNT", "500", "TYPE", type});
    if (!reply) return std::unexpected(reply.error());
    return decode_scan_page(std::move(*reply));
}

std::string glob_escape(std::string_view s) {
    std::string out;
    for (char c : s) {
        if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') out += '\\';
        out += c;
    }
    return out;
}

}  // namespace fencelock::detail
