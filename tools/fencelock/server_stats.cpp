// Reads the server's command counter for `bench`, on a connection of its own.
#include <hiredis/hiredis.h>

#include <memory>

#include "bench.hpp"

namespace fencelock::cli {

std::optional<std::int64_t> server_commands(const RedisTarget& target) {
    const auto& ep = target.endpoint;
    const timeval tv{static_cast<time_t>(target.timeout.count() / 1000),
                     static_cast<suseconds_t>(target.timeout.count() % 1000 * 1000)};
    std::unique_ptr<redisContext, decltype(&redisFree)> ctx(
        redisConnectWithTimeout(ep.host.c_str(), ep.port, tv), &redisFree);
    if (!ctx || ctx->err) return std::nullopt;
    if (!ep.password.empty()) {
        const char* argv[] = {"AUTH", ep.user.c_str(), ep.password.c_str()};
        const int argc = ep.user.empty() ? 2 : 3;
        if (ep.user.empty()) argv[1] = ep.password.c_str();
        freeReplyObject(redisCommandArgv(ctx.get(), argc, argv, nullptr));
    }
    std::unique_ptr<redisReply, decltype(&freeReplyObject)> reply(
        static_cast<redisReply*>(redisCommand(ctx.get(), "INFO stats")), &freeReplyObject);
    if (!reply || reply->type != REDIS_REPLY_STRING) return std::nullopt;
    const std::string info(reply->str, reply->len);
    const std::string key = "total_commands_processed:";
    const auto at = info.find(key);
    if (at == std::string::npos) return std::nullopt;
    return std::stoll(info.substr(at + key.size()));
}

}  // namespace fencelock::cli
