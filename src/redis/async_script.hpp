#pragma once
// A script call on the event loop (the asynchronous lock API): the EVALSHA, the EVAL that
// follows a NOSCRIPT, and an optional command sent right after the script in the same write
// (WAIT), as run_script_batch_then does on a blocking connection.
#include <expected>
#include <functional>
#include <string>
#include <system_error>
#include <vector>

#include "redis/async_loop.hpp"
#include "redis/script_runner.hpp"

namespace fencelock::detail {

/// Called once on the loop thread: the script's result (an error reply as its error code) and
/// the reply to `then`, or the transport error that failed the request.
using ScriptDone = std::move_only_function<void(std::expected<BatchThen, std::error_code>)>;

/// Runs `call` of `script` on `loop`; `then` (empty: none) follows it on the same connection.
/// `script` must outlive the call (the embedded scripts are static).
void run_script_async(AsyncLoop& loop, const ScriptSource& script, OwnedScriptCall call, std::vector<std::string> then,
                      ScriptDone done);

}  // namespace fencelock::detail
