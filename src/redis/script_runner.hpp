#pragma once
#include <expected>
#include <initializer_list>
#include <span>
#include <vector>
#include <string_view>
#include <system_error>

#include "redis/connection.hpp"
#include "redis/script_source.hpp"

namespace fencelock::detail {

/// One invocation of a script (alone or in a batch).
struct ScriptCall {
    std::vector<std::string_view> keys;
    std::vector<std::string_view> args;
};

/// Runs a script by EVALSHA; on NOSCRIPT (script cache flushed, server restarted, failover)
/// sends the body with EVAL, which also caches it for the next EVALSHA. An error reply comes
/// back as an error code (error_from_reply), never as a Reply.
std::expected<Reply, std::error_code> run_script(Connection& connection, const ScriptSource& script,
                                                 std::initializer_list<std::string_view> keys,
                                                 std::initializer_list<std::string_view> args);
std::expected<Reply, std::error_code> run_script(Connection& connection, const ScriptSource& script,
                                                 const ScriptCall& call);


/// Runs the same script for many calls in one pipelined round trip (two if the script had to
/// be loaded). Per-call results: a Reply, or the error its error reply maps to. A transport
/// error fails the whole batch.
std::expected<std::vector<std::expected<Reply, std::error_code>>, std::error_code> run_script_batch(
    Connection& connection, const ScriptSource& script, std::span<const ScriptCall> calls);

/// A batch and the reply of the command sent right after it.
struct BatchThen {
    std::vector<std::expected<Reply, std::error_code>> results;
    Reply then;
};

/// run_script_batch with `then` appended to the same pipeline, so it reaches Redis right after
/// the calls on the same connection, in the same write (WAIT counts the replicas that
/// acknowledged every write before it on its connection). When calls have to be resent with
/// their body (NOSCRIPT), `then` goes again after them and `then`'s reply is the second one.
std::expected<BatchThen, std::error_code> run_script_batch_then(Connection& connection, const ScriptSource& script,
                                                                std::span<const ScriptCall> calls,
                                                                std::span<const std::string_view> then);

}  // namespace fencelock::detail
