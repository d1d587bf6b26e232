#pragma once
// FaultProxy: a loopback TCP proxy between a client and redis-server that a test steers.
//
// Each direction of every connection is a queue of byte chunks. A chunk read from one side is
// queued for the other according to that direction's Flow when it was read:
//   pass   due at once;
//   delay  due `delay` later;
//   hold   held until release() (or pass());
//   drop   swallowed (the request still reached Redis, the reply never comes back).
// Chunks leave strictly in order, so a held chunk also holds everything behind it: bytes are
// late, never reordered, as on a real TCP connection.
//
// Every control call is applied under the proxy's mutex before it returns, so after
// `hold_replies()` the next byte Redis sends is held: tests sequence faults without sleeping.
// One thread runs a poll(2) loop over the listener, a wake-up pipe and all connection pairs.
// The destructor stops it and closes every descriptor.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace fencelock::faults {

class FaultProxy {
public:
    enum class Flow { pass, delay, hold, drop };

    struct Counters {
        /// Bytes delivered client -> server and server -> client.
        std::uint64_t bytes_up = 0;
        std::uint64_t bytes_down = 0;
        /// Bytes held now (waiting for release()).
        std::uint64_t held_up = 0;
        std::uint64_t held_down = 0;
        /// Bytes swallowed by drop.
        std::uint64_t dropped_up = 0;
        std::uint64_t dropped_down = 0;
        /// Connections accepted so far, open now, and closed by cut().
        std::uint64_t accepted = 0;
        std::uint64_t open = 0;
        std::uint64_t cut = 0;
    };

    /// Listens on a free loopback port and forwards to 127.0.0.1:`upstream_port`.
    /// Throws std::system_error when it cannot listen.
    explicit FaultProxy(std::uint16_t upstream_port);
    /// Stops the loop thread and closes every socket. Never throws.
    ~FaultProxy();
    FaultProxy(const FaultProxy&) = delete;
    FaultProxy& operator=(const FaultProxy&) = delete;

    std::uint16_t port() const noexcept { return port_; }
    /// redis://127.0.0.1:PORT
    std::string url() const;

    /// Applies to requests (client -> server) read from now on.
    void set_requests(Flow flow, std::chrono::milliseconds delay = {});
    /// Applies to replies (server -> client) read from now on.
    void set_replies(Flow flow, std::chrono::milliseconds delay = {});
    void hold_requests() { set_requests(Flow::hold); }
    void hold_replies() { set_replies(Flow::hold); }
    void drop_replies() { set_replies(Flow::drop); }
    void delay_replies(std::chrono::milliseconds d) { set_replies(Flow::delay, d); }
    /// Swallows the next `chunks` reads from the server (one small reply is one read), then
    /// passes replies again: "this one reply is lost".
    void drop_next_replies(std::size_t chunks);
    /// Both directions back to pass; everything held is delivered now, in order.
    void pass();
    void release() { pass(); }

    /// Closes every open connection now (both sides; queued bytes are discarded).
    void cut();
    /// While on, new connections are refused (the listener is closed: ECONNREFUSED).
    void refuse(bool on);

    Counters counters() const;

private:
    struct State;
    void run();
    std::unique_ptr<State> state_;
    std::uint16_t port_ = 0;
};

}  // namespace fencelock::faults
