#include "redis/wire.hpp"

#include <hiredis/hiredis.h>

#include <charconv>

#include "fencelock/error.hpp"
#include "redis/blocking_io.hpp"

namespace fencelock::detail {
namespace {

void append_header(std::string& out, char type, std::size_t n) {
    char digits[24];
    const auto end = std::to_chars(digits, digits + sizeof digits, n).ptr;
    out += type;
    out.append(digits, end);
    out += "\r\n";
}

template <class Argv>
void append_argv(std::string& out, const Argv& argv) {
    append_header(out, '*', argv.size());
    for (std::string_view a : argv) {
        append_header(out, '$', a.size());
        out.append(a);
        out += "\r\n";
    }
}

}  // namespace

void ReaderDeleter::operator()(redisReader* r) const noexcept {
    if (r != nullptr) redisReaderFree(r);
}

ReaderPtr make_reader() {
    ReaderPtr reader(redisReaderCreate());
    if (!reader) throw std::bad_alloc();
    return reader;
}

void append_resp(std::string& out, std::span<const std::string_view> argv) { append_argv(out, argv); }
void append_resp(std::string& out, std::span<const std::string> argv) { append_argv(out, argv); }

Wire::Wire(Transport transport) : transport_(std::move(transport)), reader_(make_reader()) {}

std::expected<std::vector<Reply>, std::error_code> Wire::exchange(std::size_t count, clock::time_point deadline) {
    const auto sent = blocking_io::send_all(transport_, out_, deadline);
    out_.erase(0, sent.bytes);
    if (sent.error) return std::unexpected(sent.error);
    return blocking_io::read_replies(transport_, *reader_, count, deadline);
}

Transport::Io Wire::flush() {
    while (!out_.empty()) {
        const auto io = transport_.write_some(out_);
        if (!io.ok()) return io;
        out_.erase(0, io.bytes);
    }
    return {Transport::Io::Status::ok, 0};
}

namespace {
constexpr std::size_t read_size = 16 * 1024;
}  // namespace

Transport::Io Wire::fill() {
    char buffer[read_size];
    const auto io = transport_.read_some(buffer, sizeof buffer);
    if (io.ok() && redisReaderFeed(reader_.get(), buffer, io.bytes) != REDIS_OK)
        return {Transport::Io::Status::failed, 0};
    return io;
}

bool Wire::may_hold_more(const Transport::Io& last) const noexcept {
    return (last.ok() && last.bytes == read_size) || transport_.holds_bytes();
}

std::expected<std::optional<Reply>, std::error_code> Wire::parsed_reply() {
    void* raw = nullptr;
    if (redisReaderGetReply(reader_.get(), &raw) != REDIS_OK) return std::unexpected(errc::connection_lost);
    if (raw == nullptr) return std::nullopt;
    Reply reply = convert(static_cast<redisReply*>(raw));
    freeReplyObject(raw);
    return reply;
}

std::expected<std::optional<Reply>, std::error_code> Wire::next_reply() {
    for (;;) {
        auto parsed = parsed_reply();
        if (!parsed || *parsed) return parsed;
        const auto io = fill();
        if (io.status == Transport::Io::Status::again) return std::nullopt;
        if (!io.ok()) return std::unexpected(errc::connection_lost);
    }
}

}  // namespace fencelock::detail
