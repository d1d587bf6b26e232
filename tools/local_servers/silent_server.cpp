#include "local_servers/silent_server.hpp"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>

namespace fencelock::local {

SilentServer::SilentServer(OnAccept on_accept) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 || ::listen(fd_, 64) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
        if (fd_ >= 0) ::close(fd_);
        throw std::runtime_error("SilentServer: cannot listen on loopback");
    }
    port_ = ntohs(addr.sin_port);
    // Accepting (rather than leaving connections in the backlog) keeps the backlog from
    // filling: every connect succeeds however many a test makes.
    acceptor_ = std::jthread([this, on_accept] {
        for (;;) {
            const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
            if (c >= 0) {
                std::lock_guard lock(mutex_);
                if (on_accept == OnAccept::hang_up) {
                    ::close(c);
                    hung_up_++;
                } else {
                    connections_.push_back(c);
                }
            } else if (errno != EINTR && errno != ECONNABORTED) {
                return;  // shutdown() in the destructor
            }
        }
    });
}

SilentServer::~SilentServer() {
    ::shutdown(fd_, SHUT_RDWR);  // wakes accept4() with EINVAL
    if (acceptor_.joinable()) acceptor_.join();
    ::close(fd_);
    for (int c : connections_) ::close(c);
}

std::size_t SilentServer::accepted() const {
    std::lock_guard lock(mutex_);
    return connections_.size() + hung_up_;
}

}  // namespace fencelock::local
