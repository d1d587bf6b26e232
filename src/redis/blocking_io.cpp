#include "redis/blocking_io.hpp"

#include <hiredis/hiredis.h>

#include <memory>

#include "fencelock/error.hpp"
#include "redis/wire.hpp"

namespace fencelock::detail::blocking_io {
namespace {

struct ReplyDeleter {
    void operator()(void* r) const noexcept { freeReplyObject(r); }
};

}  // namespace

IdleSocket look(Transport& transport) noexcept {
    try {
        return transport.idle_and_open() ? IdleSocket::quiet : IdleSocket::closed;
    } catch (...) {
        return IdleSocket::closed;
    }
}

Sent send_all(Transport& transport, std::string_view bytes, clock::time_point deadline) noexcept {
    Sent sent;
    while (sent.bytes < bytes.size()) {
        const auto io = transport.write_some(bytes.substr(sent.bytes));
        if (io.ok()) {
            sent.bytes += io.bytes;
            ++sent.calls;
        } else if (io.status == Transport::Io::Status::again) {
            if (!wait_for(transport.fd(), transport.want(), deadline)) {
                sent.error = errc::reply_timeout;
                return sent;
            }
        } else {
            sent.error = errc::connection_lost;
            return sent;
        }
    }
    return sent;
}

std::expected<std::vector<Reply>, std::error_code> read_replies(Transport& transport, redisReader& reader,
                                                                std::size_t count, clock::time_point deadline) {
    std::vector<Reply> replies;
    replies.reserve(count);
    Transport::Want wait = Transport::Want::read;
    for (;;) {
        while (replies.size() < count) {
            void* raw = nullptr;
            if (redisReaderGetReply(&reader, &raw) != REDIS_OK) return std::unexpected(errc::connection_lost);
            if (raw == nullptr) break;
            const std::unique_ptr<void, ReplyDeleter> owned(raw);
            replies.push_back(convert(static_cast<const redisReply*>(raw)));
        }
        if (replies.size() == count) return replies;
        // Poll first (the reply is rarely there yet), unless TLS holds bytes poll cannot see.
        if (!transport.holds_bytes() && !wait_for(transport.fd(), wait, deadline))
            return std::unexpected(errc::reply_timeout);
        char buffer[16 * 1024];
        const auto io = transport.read_some(buffer, sizeof buffer);
        wait = io.status == Transport::Io::Status::again ? transport.want() : Transport::Want::read;
        if (io.ok()) {
            if (redisReaderFeed(&reader, buffer, io.bytes) != REDIS_OK) return std::unexpected(errc::connection_lost);
        } else if (io.status != Transport::Io::Status::again) {
            return std::unexpected(errc::connection_lost);
        }
    }
}

// Unread bytes, or a reply begun and not finished: hiredis keeps its parse stack between calls.
// A call that found no bytes leaves the stack set up with an untyped root (type -1): idle.
bool holds_more(const redisReader& reader) noexcept {
    return reader.pos < reader.len || (reader.ridx >= 0 && reader.rstack[0].type >= 0);
}

}  // namespace fencelock::detail::blocking_io
