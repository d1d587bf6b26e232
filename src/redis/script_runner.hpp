#pragma once
#include <expected>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "redis/connection.hpp"
#include "redis/script_source.hpp"

namespace fencelock::detail {

/// One invocation of a script (alone or in a batch).
struct ScriptCall {
    std::vector<std::string_view> keys;
    std::vector<std::string_view> args;
};

/// A call whose strings it owns, for one that outlives the frame that built it (the
/// asynchronous API). view() points into it.
struct OwnedScriptCall {
    std::vector<std::string> keys;
    std::vector<std::string> args;

    ScriptCall view() const;
};

/// The argv of `verb` (EVALSHA or EVAL) with `script` (its SHA1 or body) for `call`.
std::vector<std::string_view> eval_argv(std::string_view verb, std::string_view script, const std::string& numkeys,
                                        const ScriptCall& call);
/// Redis does not have the script cached: send its body.
bool is_noscript(const Reply& r);
/// A script's reply as the runners return it: an error reply becomes its error code, with the
/// script's keys named in the error's detail text.
std::expected<Reply, std::error_code> script_result(Reply r, std::span<const std::string_view> keys);

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
