#pragma once
// Opening a hiredis context the way every fencelock connection needs it, shared by the
// blocking connection and the release notifier's subscriber.
#include <expected>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>
#include <system_error>

#include "redis/hiredis_connection.hpp"
#include "redis/reply.hpp"

struct redisContext;
struct redisReply;

namespace fencelock::detail {

struct ContextDeleter {
    void operator()(redisContext* c) const noexcept;
};
using ContextPtr = std::unique_ptr<redisContext, ContextDeleter>;

/// A blocking context: connected within connect_timeout, close-on-exec, keep-alive, AUTH and
/// SELECT done, reads bounded by command_timeout. errc::unavailable or auth_failed otherwise;
/// either way nothing of the caller's was sent.
/// With a Sentinel topology the handshake also confirms ROLE is master (not_master otherwise).
std::expected<ContextPtr, std::error_code> open_context(const ConnectionSettings& settings);
/// The same, telling which server the topology named (set even when connecting failed).
std::expected<ContextPtr, std::error_code> open_context(const ConnectionSettings& settings, ServerAddress& reached);

/// hiredis's reply tree as a Reply value.
Reply convert(const redisReply* r);

/// Appends one command to the context's output buffer (binary-safe); false if hiredis refused.
bool append_command(redisContext* ctx, std::span<const std::string_view> argv);
bool append_command(redisContext* ctx, std::span<const std::string> argv);

/// Reads `n` replies (a blocking context flushes its buffer first). nullopt on a transport
/// failure; errno is then what the failing read left, for telling a timeout from a break.
std::optional<std::vector<Reply>> read_replies(redisContext* ctx, std::size_t n);

}  // namespace fencelock::detail
