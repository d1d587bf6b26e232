// Reads the server's command counter for `bench`, on a connection of its own (the library's
// blocking connection: the same handshake as every other connection).
#include <charconv>
#include <string_view>

#include "bench.hpp"
#include "redis/hiredis_connection.hpp"

namespace fencelock::cli {

std::optional<std::int64_t> server_commands(const RedisTarget& target) {
    auto connection = detail::make_hiredis_connection(
        {.endpoint = target.endpoint, .connect_timeout = target.timeout, .command_timeout = target.timeout});
    const std::string_view info_stats[] = {"INFO", "stats"};
    auto reply = connection->command(info_stats);
    if (!reply || reply->kind != detail::Reply::Kind::string) return std::nullopt;
    const std::string_view info = reply->str;
    constexpr std::string_view key = "total_commands_processed:";
    const auto at = info.find(key);
    if (at == std::string_view::npos) return std::nullopt;
    std::int64_t n = 0;
    const char* begin = info.data() + at + key.size();
    if (std::from_chars(begin, info.data() + info.size(), n).ec != std::errc{}) return std::nullopt;
    return n;
}

}  // namespace fencelock::cli
