#pragma once
// A handler's stdout or stderr cut into log lines (worker): pure, no I/O.
//
// The worker logs each line a handler writes as one JSON object, so its stderr stays one JSON
// object per line whatever the handler prints. Three things make bytes into a safe log line:
// - a cap: a line longer than max_line_bytes is logged in pieces, each but the last marked
//   `continues` (a handler printing one 1 MB line must not make one 1 MB log object, nor make
//   the worker buffer without bound);
// - valid UTF-8: JSON text must be UTF-8, and a handler may print anything (binary, Latin-1):
//   each invalid byte becomes U+FFFD, and a piece is never cut inside a character;
// - a last line without its newline is still logged, by finish(), when the handler is gone.
// Header-only so the unit tests use it without linking the CLI.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace fencelock::cli {

/// One log line of handler output.
struct OutputLine {
    std::string text;        ///< valid UTF-8, without the newline (and without a CR before it)
    bool continues = false;  ///< cut at the cap: the next line of this stream goes on with it
};

/// `bytes` with every byte that is not part of a well-formed UTF-8 character (RFC 3629: no
/// overlong forms, no surrogates, nothing above U+10FFFF) replaced by U+FFFD.
inline std::string valid_utf8(std::string_view bytes) {
    std::string out;
    out.reserve(bytes.size());
    const auto at = [&](std::size_t i) { return static_cast<unsigned char>(bytes[i]); };
    for (std::size_t i = 0; i < bytes.size();) {
        const unsigned char c = at(i);
        std::size_t len = 0;
        unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
        if (c < 0x80) len = 1;
        else if (c >= 0xC2 && c <= 0xDF) len = 2;
        else if (c == 0xE0) len = 3, lo = 0xA0;
        else if (c == 0xED) len = 3, hi = 0x9F;
        else if (c >= 0xE1 && c <= 0xEF) len = 3;
        else if (c == 0xF0) len = 4, lo = 0x90;
        else if (c == 0xF4) len = 4, hi = 0x8F;
        else if (c >= 0xF1 && c <= 0xF3) len = 4;
        bool ok = len > 0 && i + len <= bytes.size();
        for (std::size_t k = 1; ok && k < len; ++k) {
            const unsigned char b = at(i + k);
            ok = k == 1 ? b >= lo && b <= hi : b >= 0x80 && b <= 0xBF;
        }
        if (ok) {
            out.append(bytes.substr(i, len));
            i += len;
        } else {
            out += "\xEF\xBF\xBD";
            ++i;
        }
    }
    return out;
}

/// Cuts one stream into OutputLines as its bytes arrive, in chunks of any size.
class LineSplitter {
public:
    /// About 16 KiB: a stack trace line fits, a dumped blob is split.
    static constexpr std::size_t default_max_line_bytes = 16 * 1024;

    /// `max_line_bytes` (at least 4, so a piece always holds one character) caps a piece.
    explicit LineSplitter(std::size_t max_line_bytes = default_max_line_bytes)
        : max_(max_line_bytes < 4 ? 4 : max_line_bytes) {}

    /// The lines that `bytes` completes; keeps at most max_line_bytes bytes of an open line.
    std::vector<OutputLine> feed(std::string_view bytes) {
        pending_.append(bytes);
        std::vector<OutputLine> out;
        std::size_t start = 0;
        for (;;) {
            const std::string_view rest = std::string_view(pending_).substr(start);
            const auto newline = rest.find('\n');
            if (newline != std::string_view::npos && newline <= max_) {
                out.push_back(line(rest.substr(0, newline), false));
                start += newline + 1;
            } else if (rest.size() > max_) {  // no newline in its first max_ + 1 bytes
                const std::size_t cut = character_boundary(rest, max_);
                out.push_back(line(rest.substr(0, cut), true));
                start += cut;
            } else {
                break;
            }
        }
        pending_.erase(0, start);
        return out;
    }

    /// The open line, if any, once the stream has ended (a last line without a newline).
    std::vector<OutputLine> finish() {
        std::vector<OutputLine> out;
        if (!pending_.empty()) out.push_back(line(pending_, false));
        pending_.clear();
        return out;
    }

private:
    /// The largest cut <= `cap` (< s.size()) that does not fall inside a UTF-8 character of `s`
    /// (`cap` itself when the bytes there are not UTF-8 anyway). Never 0.
    static std::size_t character_boundary(std::string_view s, std::size_t cap) {
        for (std::size_t back = 0; back < 4 && back < cap; ++back) {
            const auto c = static_cast<unsigned char>(s[cap - back]);
            if ((c & 0xC0) != 0x80) return cap - back;  // s[cap - back] starts a character
        }
        return cap;
    }

    static OutputLine line(std::string_view text, bool continues) {
        if (!continues && text.ends_with('\r')) text.remove_suffix(1);
        return {valid_utf8(text), continues};
    }

    std::size_t max_;
    std::string pending_;
};

}  // namespace fencelock::cli
