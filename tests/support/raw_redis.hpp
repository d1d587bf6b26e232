#pragma once
// A raw RESP connection for tests that must send exactly one command and watch what happens
// to it: a PING or INCR through the fault proxy, or the owner-blind DEL a naive unlock sends
// (the negative control of the delayed-release scenario). Not a client library.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fencelock::test_support {

class RawRedis {
public:
    /// Connects to 127.0.0.1:port; throws std::system_error when it cannot.
    explicit RawRedis(std::uint16_t port);
    ~RawRedis();
    RawRedis(const RawRedis&) = delete;
    RawRedis& operator=(const RawRedis&) = delete;

    /// Sends one command as a RESP array of bulk strings.
    void send(const std::vector<std::string>& argv);
    /// The next reply line without its CRLF (`+PONG`, `:1`, `-ERR ...`), or nullopt when none
    /// arrived within `timeout`. Only single-line replies are understood.
    std::optional<std::string> read_line(std::chrono::milliseconds timeout);
    /// True when the server side closed the connection within `timeout`.
    bool closed_within(std::chrono::milliseconds timeout);

private:
    int fd_ = -1;
    std::string buffer_;
    bool eof_ = false;
};

}  // namespace fencelock::test_support
