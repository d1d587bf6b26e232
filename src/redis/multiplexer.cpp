#include "redis/multiplexer.hpp"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <utility>

#include "fencelock/error.hpp"

namespace fencelock::detail {

void AsyncRequest::release_waiter() noexcept {
    done.store(1, std::memory_order_release);
    done.notify_one();
}

void AsyncRequest::wait() const noexcept {
    while (done.load(std::memory_order_acquire) == 0) done.wait(0, std::memory_order_acquire);
}

void Multiplexer::add(Request request) { queued_.push_back(std::move(request)); }

void Multiplexer::start_connection(std::string preamble, std::size_t preamble_replies) {
    reader_ = make_reader();
    ledger_.reset();
    preamble_replies_.clear();
    preamble_left_ = preamble_replies;
    out_ = std::move(preamble);
    ledger_.hand_over(out_.size());
}

Multiplexer::Batch Multiplexer::prepare_write() {
    Batch batch;
    if (queued_.empty() || (!handed_.empty() && !queued_.front()->on_done)) return batch;
    batch.requests = queued_.size();
    while (!queued_.empty()) {
        handed_.push_back(std::move(queued_.front()));
        queued_.pop_front();
        AsyncRequest& r = *handed_.back();
        r.first_byte = ledger_.handed();
        out_.append(r.wire);
        ledger_.hand_over(r.wire.size());
        batch.commands += r.ends.size();
    }
    return batch;
}

void Multiplexer::commit_write(std::size_t n) noexcept {
    out_.erase(0, std::min(n, out_.size()));
    ledger_.note_buffered(out_.size());
}

Multiplexer::Consumed Multiplexer::consume(std::string_view bytes) {
    Consumed consumed;
    if (!reader_) reader_ = make_reader();
    if (!bytes.empty() && redisReaderFeed(reader_.get(), bytes.data(), bytes.size()) != REDIS_OK) {
        consumed.error = errc::connection_lost;
        return consumed;
    }
    for (;;) {
        void* raw = nullptr;
        if (redisReaderGetReply(reader_.get(), &raw) != REDIS_OK) {
            consumed.error = errc::connection_lost;  // not RESP
            return consumed;
        }
        if (raw == nullptr) return consumed;  // no whole reply yet: the reader keeps the rest
        Reply reply = convert(static_cast<redisReply*>(raw));
        freeReplyObject(raw);
        ++consumed.replies;
        if (preamble_left_ > 0) {
            preamble_replies_.push_back(std::move(reply));
            if (--preamble_left_ == 0) consumed.preamble = std::exchange(preamble_replies_, {});
            continue;
        }
        if (handed_.empty()) {
            consumed.error = errc::connection_lost;  // a reply nobody asked for
            return consumed;
        }
        AsyncRequest& r = *handed_.front();
        r.replies.push_back(std::move(reply));
        if (asks_for_another_server(r.replies.back())) consumed.asks_for_another_server = true;
        if (r.replies.size() == r.ends.size()) {
            r.error = {};
            consumed.completed.push_back(std::move(handed_.front()));
            handed_.pop_front();
        }
    }
}

bool Multiplexer::would_fail_unsent(Queued queued) const noexcept {
    return (queued == Queued::fail && !queued_.empty()) ||
           std::ranges::any_of(handed_, [&](const Request& r) { return !was_written(*r); });
}

std::vector<Multiplexer::Request> Multiplexer::cancel_on_connection_lost(std::error_code written,
                                                                         std::error_code unsent, Queued queued) {
    std::vector<Request> failed;
    failed.reserve(handed_.size() + (queued == Queued::fail ? queued_.size() : 0));
    for (auto& r : handed_) {
        fail(*r, was_written(*r) ? written : unsent);
        failed.push_back(std::move(r));
    }
    handed_.clear();
    if (queued == Queued::fail) {
        for (auto& r : queued_) {
            fail(*r, unsent);
            failed.push_back(std::move(r));
        }
        queued_.clear();
    }
    out_.clear();
    reader_.reset();
    ledger_.reset();
    preamble_replies_.clear();
    preamble_left_ = 0;
    return failed;
}

void Multiplexer::fail(AsyncRequest& r, std::error_code ec) {
    r.error = ec;
    if (ec) r.replies.clear();
}

Multiplexer::Counts Multiplexer::counts() const noexcept {
    Counts counts{.queued = queued_.size()};
    for (const auto& r : handed_) {
        if (r->first_byte + r->wire.size() <= ledger_.written()) ++counts.awaiting_reply;
        else ++counts.writing;
    }
    return counts;
}

void Multiplexer::hand_over_alone(AsyncRequest& r) noexcept {
    r.first_byte = ledger_.handed();
    ledger_.hand_over(r.wire.size());
}

void Multiplexer::commit_write_alone(const AsyncRequest& r, std::size_t written) noexcept {
    ledger_.note_buffered(r.wire.size() - std::min(written, r.wire.size()));
}

}  // namespace fencelock::detail
