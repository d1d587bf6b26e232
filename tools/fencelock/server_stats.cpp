// bench's own Redis calls, on a connection of its own (the library's blocking connection: the
// same handshake as every other connection; over every master of a redis-cluster:// endpoint):
// the servers' command counter, and the removal of bench's keys.
#include <charconv>
#include <string>
#include <string_view>
#include <vector>

#include "bench.hpp"
#include "redis/cluster_connection.hpp"
#include "redis/hiredis_connection.hpp"

namespace fencelock::cli {
namespace {

std::unique_ptr<detail::Connection> connect(const RedisTarget& target) {
    return detail::make_endpoint_connection(
        {.endpoint = target.endpoint, .connect_timeout = target.timeout, .command_timeout = target.timeout},
        detail::make_hiredis_connection);
}

std::optional<std::int64_t> commands_processed(detail::Connection& node) {
    const std::string_view info_stats[] = {"INFO", "stats"};
    auto reply = node.command(info_stats);
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

// SCAN + UNLINK of the bench keys on one server (a cluster node's SCAN sees its own keys only).
std::expected<std::size_t, std::error_code> remove_on(detail::Connection& node, const std::string& pattern) {
    std::size_t removed = 0;
    std::string cursor = "0";
    do {
        const std::string_view scan[] = {"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"};
        auto reply = node.command(scan);
        if (!reply) return std::unexpected(reply.error());
        if (reply->kind != detail::Reply::Kind::array || reply->elements.size() != 2)
            return std::unexpected(make_error_code(errc::protocol_error));
        cursor = reply->elements[0].str;
        // The keys of one SCAN page may sit in several slots: one UNLINK each (no CROSSSLOT),
        // the page's UNLINKs in one pipeline.
        std::vector<std::vector<std::string_view>> unlinks;
        for (const auto& key : reply->elements[1].elements) unlinks.push_back({"UNLINK", key.str});
        if (unlinks.empty()) continue;
        auto done = node.pipeline(unlinks);
        if (!done) return std::unexpected(done.error());
        for (const auto& r : *done) {
            if (r.kind == detail::Reply::Kind::error) return std::unexpected(detail::error_from_reply(r.str));
            removed += static_cast<std::size_t>(r.integer);
        }
    } while (cursor != "0");
    return removed;
}

}  // namespace

ServerCommandCounter::ServerCommandCounter(const RedisTarget& target) : connection_(connect(target)) {}
ServerCommandCounter::~ServerCommandCounter() = default;

std::optional<std::int64_t> ServerCommandCounter::read() {
    auto nodes = detail::each_master(*connection_);
    if (!nodes) return std::nullopt;
    std::int64_t total = 0;
    for (detail::Connection* node : *nodes) {
        auto n = commands_processed(*node);
        if (!n) return std::nullopt;
        total += *n;
    }
    // A server counts a command once it has run: this read's INFOs show up in the next one.
    total -= own_;
    own_ += static_cast<std::int64_t>(nodes->size());
    return total;
}

std::expected<std::size_t, std::error_code> remove_bench_keys(const RedisTarget& target) {
    auto connection = connect(target);
    auto nodes = detail::each_master(*connection);
    if (!nodes) return std::unexpected(nodes.error());
    // Every key of a bench resource carries its name as the hash tag: lock:{fencelock-bench:3}.
    const std::string pattern = "*{" + std::string(bench_prefix) + "*";
    std::size_t removed = 0;
    for (detail::Connection* node : *nodes) {
        auto n = remove_on(*node, pattern);
        if (!n) return n;
        removed += *n;
    }
    return removed;
}

}  // namespace fencelock::cli
