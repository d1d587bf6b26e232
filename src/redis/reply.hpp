#pragma once
// A Redis reply in our own type, so nothing above the transport sees hiredis.
#include <cstdint>
#include <string>
#include <string_view>
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

/// Maps a Redis error reply to an error code: NOSCRIPT is for the script runner; READONLY and
/// MASTERDOWN are not_master, NOREPLICAS replicas_unavailable (also when a write inside a
/// script raised them); LOADING/BUSY/TRYAGAIN/... are server_busy; WRONGTYPE, non-integer
/// values and failing scripts are corrupt_key; authentication errors auth_failed; anything
/// else protocol_error.
/// Records the reply text as the code's error_detail().
std::error_code error_from_reply(const std::string& message);
/// The same mapping without recording anything.
std::error_code classify_reply(const std::string& message);
/// The error_cause() name of an ACL or AUTH refusal ("noperm", "auth_required",
/// "auth_rejected"), of a server that is the wrong kind for the URL ("cluster_node": MOVED or
/// ASK; "read_only_replica": READONLY), empty for any other reply.
std::string_view reply_cause(const std::string& message);
/// The reply text as error_detail() records it: the server's words, and for a server of the
/// wrong kind what to point the URL at instead.
std::string reply_detail(const std::string& message);

/// True when `reply` (or an element of it) is READONLY, MASTERDOWN or LOADING: the server the
/// connection reached cannot act as the master now, and a connection that follows a master
/// should leave it and ask its topology again.
bool asks_for_another_server(const Reply& reply);

}  // namespace fencelock::detail
