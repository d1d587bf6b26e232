// bench's own Redis calls, on a connection of its own (the library's blocking connection: the
// same handshake as every other connection): the server's command counter, and the removal of
// bench's keys.
#include <charconv>
#include <string>
#include <string_view>
#include <vector>

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

std::expected<std::size_t, std::error_code> remove_bench_keys(const RedisTarget& target) {
    auto connection = detail::make_hiredis_connection(
        {.endpoint = target.endpoint, .connect_timeout = target.timeout, .command_timeout = target.timeout});
    // Every key of a bench resource carries its name as the hash tag: lock:{fencelock-bench:3}.
    const std::string pattern = "*{" + std::string(bench_prefix) + "*";
    std::size_t removed = 0;
    std::string cursor = "0";
    do {
        const std::string_view scan[] = {"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"};
        auto reply = connection->command(scan);
        if (!reply) return std::unexpected(reply.error());
        if (reply->kind != detail::Reply::Kind::array || reply->elements.size() != 2)
            return std::unexpected(make_error_code(errc::protocol_error));
        cursor = reply->elements[0].str;
        std::vector<std::string_view> unlink{"UNLINK"};
        for (const auto& key : reply->elements[1].elements) unlink.push_back(key.str);
        if (unlink.size() == 1) continue;
        auto done = connection->command(unlink);
        if (!done) return std::unexpected(done.error());
        removed += static_cast<std::size_t>(done->integer);
    } while (cursor != "0");
    return removed;
}

}  // namespace fencelock::cli
