#include "redis/script_runner.hpp"

#include <string>
#include <vector>

#include "fencelock/error.hpp"

namespace fencelock::detail {

ScriptCall OwnedScriptCall::view() const { return ScriptCall{{keys.begin(), keys.end()}, {args.begin(), args.end()}}; }

std::vector<std::string_view> eval_argv(std::string_view verb, std::string_view script, const std::string& numkeys,
                                        const ScriptCall& call) {
    std::vector<std::string_view> argv{verb, script, numkeys};
    argv.insert(argv.end(), call.keys.begin(), call.keys.end());
    argv.insert(argv.end(), call.args.begin(), call.args.end());
    return argv;
}

bool is_noscript(const Reply& r) { return r.kind == Reply::Kind::error && r.str.starts_with("NOSCRIPT"); }

// An error reply's text names the script's keys, so an operator knows which key to look at
// (WRONGTYPE does not say which).
std::expected<Reply, std::error_code> script_result(Reply r, std::span<const std::string_view> keys) {
    if (r.kind != Reply::Kind::error) return r;
    const std::error_code code = classify_reply(r.str);
    std::string text = reply_detail(r.str) + " (keys:";
    for (std::string_view key : keys) text.append(" ").append(key);
    remember_error_detail(code, text + ")", std::string(reply_cause(r.str)));
    return std::unexpected(code);
}

namespace {

// The one batch runner; `then` (may be empty) follows the calls in each pipeline sent.
std::expected<BatchThen, std::error_code> run_batch(Connection& connection, const ScriptSource& script,
                                                    std::span<const ScriptCall> calls,
                                                    std::span<const std::string_view> then) {
    std::vector<std::string> numkeys;
    numkeys.reserve(calls.size());
    std::vector<std::vector<std::string_view>> commands;
    commands.reserve(calls.size() + 1);
    for (const auto& call : calls) {
        numkeys.push_back(std::to_string(call.keys.size()));
        commands.push_back(eval_argv("EVALSHA", script.sha1, numkeys.back(), call));
    }
    if (!then.empty()) commands.emplace_back(then.begin(), then.end());
    auto replies = connection.pipeline(commands);
    if (!replies) return std::unexpected(replies.error());
    BatchThen out;
    if (!then.empty()) {
        out.then = std::move(replies->back());
        replies->pop_back();
    }

    // Calls that found the script uncached go again with its body (EVAL also caches it).
    std::vector<std::size_t> missing;
    std::vector<std::vector<std::string_view>> retry;
    for (std::size_t i = 0; i < replies->size(); ++i) {
        if (!is_noscript((*replies)[i])) continue;
        missing.push_back(i);
        retry.push_back(eval_argv("EVAL", script.body, numkeys[i], calls[i]));
    }
    if (!missing.empty()) {
        if (!then.empty()) retry.emplace_back(then.begin(), then.end());
        auto again = connection.pipeline(retry);
        if (!again) return std::unexpected(again.error());
        if (!then.empty()) out.then = std::move(again->back());
        for (std::size_t j = 0; j < missing.size(); ++j) (*replies)[missing[j]] = std::move((*again)[j]);
    }

    out.results.reserve(replies->size());
    for (std::size_t i = 0; i < replies->size(); ++i)
        out.results.push_back(script_result(std::move((*replies)[i]), calls[i].keys));
    return out;
}

}  // namespace

std::expected<Reply, std::error_code> run_script(Connection& connection, const ScriptSource& script,
                                                 std::initializer_list<std::string_view> keys,
                                                 std::initializer_list<std::string_view> args) {
    return run_script(connection, script, ScriptCall{keys, args});
}

std::expected<Reply, std::error_code> run_script(Connection& connection, const ScriptSource& script,
                                                 const ScriptCall& call) {
    const std::string numkeys = std::to_string(call.keys.size());
    auto reply = connection.command(eval_argv("EVALSHA", script.sha1, numkeys, call));
    if (reply && is_noscript(*reply)) reply = connection.command(eval_argv("EVAL", script.body, numkeys, call));
    if (!reply) return reply;
    return script_result(std::move(*reply), call.keys);
}

std::expected<std::vector<std::expected<Reply, std::error_code>>, std::error_code> run_script_batch(
    Connection& connection, const ScriptSource& script, std::span<const ScriptCall> calls) {
    auto batch = run_batch(connection, script, calls, {});
    if (!batch) return std::unexpected(batch.error());
    return std::move(batch->results);
}

std::expected<BatchThen, std::error_code> run_script_batch_then(Connection& connection, const ScriptSource& script,
                                                                std::span<const ScriptCall> calls,
                                                                std::span<const std::string_view> then) {
    return run_batch(connection, script, calls, then);
}

}  // namespace fencelock::detail
