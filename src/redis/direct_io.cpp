#include "redis/direct_io.hpp"

#include <hiredis/hiredis.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <memory>

#include "fencelock/error.hpp"
#include "redis/hiredis_context.hpp"

namespace fencelock::detail::direct_io {
namespace {

// Waits until `fd` shows `events` or `deadline` passes; false on the deadline. A poll(2)
// interrupted by a signal is retried with what is left.
bool wait_for(int fd, short events, clock::time_point deadline) noexcept {
    for (;;) {
        const auto now = clock::now();
        if (now >= deadline) return false;
        const auto ms = std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count();
        pollfd p{fd, events, 0};
        const int n = ::poll(&p, 1, static_cast<int>(std::min<std::int64_t>(ms, INT_MAX)));
        if (n > 0) return true;  // errors and hang-ups too: the next call reports them
        if (n < 0 && errno != EINTR) return true;
    }
}

bool would_block(int error) noexcept { return error == EAGAIN || error == EWOULDBLOCK; }

struct ReplyDeleter {
    void operator()(void* r) const noexcept { freeReplyObject(r); }
};

}  // namespace

IdleSocket look(int fd) noexcept {
    char byte;
    const auto n = ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n < 0 && (would_block(errno) || errno == EINTR)) return IdleSocket::quiet;
    return IdleSocket::closed;  // end of stream (0), unasked-for bytes (1), or a socket error
}

Sent send_all(int fd, std::string_view bytes, clock::time_point deadline) noexcept {
    Sent sent;
    while (sent.bytes < bytes.size()) {
        const auto n = ::send(fd, bytes.data() + sent.bytes, bytes.size() - sent.bytes, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            sent.bytes += static_cast<std::size_t>(n);
            ++sent.calls;
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && would_block(errno)) {
            if (!wait_for(fd, POLLOUT, deadline)) {
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

std::expected<std::vector<Reply>, std::error_code> read_replies(int fd, redisReader& reader, std::size_t count,
                                                                clock::time_point deadline) {
    std::vector<Reply> replies;
    replies.reserve(count);
    for (;;) {
        while (replies.size() < count) {
            void* raw = nullptr;
            if (redisReaderGetReply(&reader, &raw) != REDIS_OK) return std::unexpected(errc::connection_lost);
            if (raw == nullptr) break;
            const std::unique_ptr<void, ReplyDeleter> owned(raw);
            replies.push_back(convert(static_cast<const redisReply*>(raw)));
        }
        if (replies.size() == count) return replies;
        if (!wait_for(fd, POLLIN, deadline)) return std::unexpected(errc::reply_timeout);
        char buffer[16 * 1024];
        const auto n = ::recv(fd, buffer, sizeof buffer, MSG_DONTWAIT);
        if (n > 0) {
            if (redisReaderFeed(&reader, buffer, static_cast<std::size_t>(n)) != REDIS_OK)
                return std::unexpected(errc::connection_lost);
        } else if (n == 0 || !(would_block(errno) || errno == EINTR)) {
            return std::unexpected(errc::connection_lost);
        }
    }
}

// Unread bytes, or a reply begun and not finished: hiredis keeps its parse stack between calls.
// A call that found no bytes leaves the stack set up with an untyped root (type -1): idle.
bool holds_more(const redisReader& reader) noexcept {
    return reader.pos < reader.len || (reader.ridx >= 0 && reader.rstack[0].type >= 0);
}

}  // namespace fencelock::detail::direct_io
