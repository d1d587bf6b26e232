#pragma once
// RESP over a Transport: commands encoded into an output buffer, replies parsed by hiredis's
// redisReader from what the transport read. The blocking connection, the release subscriber
// and sentinel queries each hold one; the multiplexed loop keeps the same three parts itself.
#include <chrono>
#include <cstddef>
#include <expected>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "redis/reply.hpp"
#include "redis/transport.hpp"

struct redisReader;
struct redisReply;

namespace fencelock::detail {

struct ReaderDeleter {
    void operator()(redisReader* r) const noexcept;
};
using ReaderPtr = std::unique_ptr<redisReader, ReaderDeleter>;
/// A reader with hiredis's default reply objects (convert() reads them).
ReaderPtr make_reader();

/// hiredis's reply tree as a Reply value.
Reply convert(const redisReply* r);

/// Appends one command in RESP (an array of bulk strings) to `out`.
void append_resp(std::string& out, std::span<const std::string_view> argv);
void append_resp(std::string& out, std::span<const std::string> argv);

class Wire {
public:
    using clock = std::chrono::steady_clock;

    explicit Wire(Transport transport);

    Transport& transport() noexcept { return transport_; }
    const Transport& transport() const noexcept { return transport_; }
    redisReader& reader() noexcept { return *reader_; }

    /// Queues a command; nothing is written until exchange() or flush().
    void append(std::span<const std::string_view> argv) { append_resp(out_, argv); }
    void append(std::span<const std::string> argv) { append_resp(out_, argv); }
    /// Queues commands already in RESP.
    void append_raw(std::string_view resp) { out_.append(resp); }
    /// Bytes queued and not written yet.
    std::size_t unsent() const noexcept { return out_.size(); }

    /// Writes what is queued and reads `count` replies, all by `deadline`. errc::reply_timeout
    /// when it passed first, errc::connection_lost when the stream ended or failed (why:
    /// transport().last_failure()). After either the stream may hold a late reply: never
    /// reuse it.
    std::expected<std::vector<Reply>, std::error_code> exchange(std::size_t count, clock::time_point deadline);

    /// Non-blocking: writes what the socket takes. ok once everything is written, again (poll
    /// for transport().want()), or failed.
    Transport::Io flush();
    bool has_unsent() const noexcept { return !out_.empty(); }

    /// Non-blocking: the next reply, reading what the socket has when none is parsed yet.
    /// nullopt when no whole reply is there; errc::connection_lost when the stream ended,
    /// failed, or is not RESP.
    std::expected<std::optional<Reply>, std::error_code> next_reply();

    /// Non-blocking, one read: feeds the parser what the transport returns. ok with the
    /// bytes read, again, closed or failed (bytes that are not RESP: failed).
    Transport::Io fill();
    /// Whether one more fill() may find bytes now without polling: the last read filled its
    /// whole buffer, or TLS holds bytes that poll(2) cannot see.
    bool may_hold_more(const Transport::Io& last) const noexcept;
    /// The next reply already parsed, without reading; errc::connection_lost when the bytes
    /// are not RESP.
    std::expected<std::optional<Reply>, std::error_code> parsed_reply();

private:
    Transport transport_;
    ReaderPtr reader_;
    std::string out_;
};

}  // namespace fencelock::detail
