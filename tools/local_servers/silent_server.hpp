#pragma once
// A loopback TCP listener that accepts every connection and never reads or writes on it: a
// server that completes the TCP handshake and then stalls (a TLS client's handshake, or a
// plaintext client's first command, never gets an answer), or hangs up at once (as a TLS port
// answers plaintext). Silent connections stay open until the object dies.
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace fencelock::local {

class SilentServer {
public:
    enum class OnAccept { stay_silent, hang_up };

    /// Listens on a free loopback port. Throws std::runtime_error when it cannot.
    explicit SilentServer(OnAccept on_accept = OnAccept::stay_silent);
    /// Closes the listener and every connection it accepted.
    ~SilentServer();
    SilentServer(const SilentServer&) = delete;
    SilentServer& operator=(const SilentServer&) = delete;

    std::uint16_t port() const { return port_; }
    /// Connections accepted so far.
    std::size_t accepted() const;

private:
    int fd_ = -1;
    std::uint16_t port_ = 0;
    mutable std::mutex mutex_;
    std::vector<int> connections_;
    std::size_t hung_up_ = 0;
    std::jthread acceptor_;
};

}  // namespace fencelock::local
