#pragma once
// A Redis reply in our own type, so nothing above the transport sees hiredis.
#include <cstdint>
#include <string>
#include <system_error>
#include <vector>

namespace fencelock::detail {

struct Reply {
    enum class Kind { nil, integer, string, status, error, array };
    Kind kind = Kind::nil;
    std::int64_t integer = 0;
    std::string str;  ///< string, status and error replies
    std::vector<Reply> elements;

    static Reply make_integer(std::int64_t v) { return {Kind::integer, v, {}, {}}; }
    static Reply make_string(std::string s) { return {Kind::string, 0, std::move(s), {}}; }
    static Reply make_error(std::string s) { return {Kind::error, 0, std::move(s), {}}; }
    static Reply make_array(std::vector<Reply> e) { return {Kind::array, 0, {}, std::move(e)}; }
    static Reply make_nil() { return {}; }
};

/// Maps a Redis error reply to an error code: NOSCRIPT is for the script runner; WRONGTYPE,
/// non-integer values and failing scripts are corrupt_key; LOADING/BUSY/READONLY/... are
/// server_busy; authentication errors auth_failed; anything else protocol_error.
std::error_code error_from_reply(const std::string& message);

}  // namespace fencelock::detail
