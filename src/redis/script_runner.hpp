#pragma once
#include <expected>
#include <initializer_list>
#include <string_view>
#include <system_error>

#include "redis/connection.hpp"
#include "redis/scripts.hpp"

namespace fencelock::detail {

/// Runs a script by EVALSHA; on NOSCRIPT (script cache flushed, server restarted, failover)
/// sends the body with EVAL, which also caches it for the next EVALSHA. An error reply comes
/// back as an error code (error_from_reply), never as a Reply.
std::expected<Reply, std::error_code> run_script(Connection& connection, const ScriptSource& script,
                                                 std::initializer_list<std::string_view> keys,
                                                 std::initializer_list<std::string_view> args);

}  // namespace fencelock::detail
