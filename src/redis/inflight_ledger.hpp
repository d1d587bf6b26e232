#pragma once
// Which requests of a broken connection were written: the multiplexer's rule for failing them.
//
// Every byte handed to hiredis for one connection has an offset in that connection's output
// stream (the handshake's bytes included). hiredis writes the stream in order, so the bytes
// written so far are a prefix of it: a request whose first byte lies inside that prefix was at
// least partly written, and Redis may have run it (its reply lost: outcome unknown); a request
// that starts at or after the prefix's end never left the process (safe to fail as unavailable
// and to retry). A failed write(2) wrote nothing, so the prefix last recorded is still exact
// when the connection dies. No I/O here: the loop feeds in what it handed and what is buffered.
#include <cstddef>
#include <cstdint>

namespace fencelock::detail {

/// The output-stream accounting of one connection, from its connect to its end.
class InflightLedger {
public:
    /// Offset the next handed byte gets: a request records it before its commands are handed.
    std::uint64_t handed() const noexcept { return handed_; }
    /// Bytes of the stream that reached the socket.
    std::uint64_t written() const noexcept { return written_; }

    /// `bytes` more were handed over (appended to hiredis' output buffer).
    void hand_over(std::size_t bytes) noexcept { handed_ += bytes; }
    /// After an I/O step: `still_buffered` of the handed bytes are not written yet.
    void note_buffered(std::size_t still_buffered) noexcept;

    /// True when the request starting at `first_byte` was at least partly written (its outcome is
    /// unknown once the connection breaks), false when none of it left (safe to retry).
    bool was_written(std::uint64_t first_byte) const noexcept { return first_byte < written_; }

    /// The connection ended: the next one starts a new stream at offset 0.
    void reset() noexcept { handed_ = written_ = 0; }

private:
    std::uint64_t handed_ = 0;
    std::uint64_t written_ = 0;
};

}  // namespace fencelock::detail
