#include "redis/script_runner.hpp"

#include <string>
#include <vector>

namespace fencelock::detail {
namespace {

std::expected<Reply, std::error_code> eval(Connection& connection, std::string_view verb,
                                           std::string_view script,
                                           std::initializer_list<std::string_view> keys,
                                           std::initializer_list<std::string_view> args) {
    const std::string numkeys = std::to_string(keys.size());
    std::vector<std::string_view> argv{verb, script, numkeys};
    argv.insert(argv.end(), keys.begin(), keys.end());
    argv.insert(argv.end(), args.begin(), args.end());
    return connection.command(argv);
}

}  // namespace

std::expected<Reply, std::error_code> run_script(Connection& connection, const ScriptSource& script,
                                                 std::initializer_list<std::string_view> keys,
                                                 std::initializer_list<std::string_view> args) {
    auto reply = eval(connection, "EVALSHA", script.sha1, keys, args);
    if (reply && reply->kind == Reply::Kind::error && reply->str.starts_with("NOSCRIPT"))
        reply = eval(connection, "EVAL", script.body, keys, args);
    if (!reply) return reply;
    if (reply->kind == Reply::Kind::error) return std::unexpected(error_from_reply(reply->str));
    return reply;
}

}  // namespace fencelock::detail
