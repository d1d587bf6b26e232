#include "support/raw_redis.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace fencelock::test_support {

using Clock = std::chrono::steady_clock;

RawRedis::RawRedis(std::uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    if (fd_ < 0 || ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        const int e = errno;
        if (fd_ >= 0) ::close(fd_);
        throw std::system_error(e, std::generic_category(), "RawRedis connect");
    }
}

RawRedis::~RawRedis() { ::close(fd_); }

void RawRedis::send(const std::vector<std::string>& argv) {
    std::string out = "*" + std::to_string(argv.size()) + "\r\n";
    for (const auto& a : argv) out += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
    std::size_t off = 0;
    while (off < out.size()) {
        const ssize_t n = ::send(fd_, out.data() + off, out.size() - off, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) continue;
            throw std::system_error(errno, std::generic_category(), "RawRedis send");
        }
        off += static_cast<std::size_t>(n);
    }
}

std::optional<std::string> RawRedis::read_line(std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
        if (auto nl = buffer_.find("\r\n"); nl != std::string::npos) {
            std::string line = buffer_.substr(0, nl);
            buffer_.erase(0, nl + 2);
            return line;
        }
        if (eof_) return std::nullopt;
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
        if (left <= 0) return std::nullopt;
        pollfd p{fd_, POLLIN, 0};
        if (::poll(&p, 1, static_cast<int>(left)) <= 0) continue;
        char buf[4096];
        const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
        if (n <= 0) eof_ = true;
        else buffer_.append(buf, static_cast<std::size_t>(n));
    }
}

bool RawRedis::closed_within(std::chrono::milliseconds timeout) {
    while (!eof_) {
        if (!read_line(timeout)) break;
    }
    return eof_;
}

}  // namespace fencelock::test_support
