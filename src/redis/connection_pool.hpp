#pragma once
#include <atomic>
#include <functional>
#include <memory>
#include <vector>

#include "redis/connection.hpp"

namespace fencelock::detail {

/// The connections of one client, shared by all its threads. Each is multiplexed (any number
/// of threads may use it at once, their commands pipelined on one socket), so a caller does not
/// wait for a free connection: it takes the next one round-robin. Creating them does no I/O;
/// each connects on its first command.
class ConnectionPool {
public:
    using Factory = std::function<std::unique_ptr<Connection>()>;

    ConnectionPool(const Factory& factory, std::size_t size);

    /// A connection to use for one call (kept as a handle so call sites read `*pool.borrow()`).
    class Borrowed {
    public:
        explicit Borrowed(Connection& c) : c_(&c) {}
        Connection& operator*() const noexcept { return *c_; }
        Connection* operator->() const noexcept { return c_; }

    private:
        Connection* c_;
    };

    Borrowed borrow();

private:
    std::vector<std::unique_ptr<Connection>> connections_;
    std::atomic<std::size_t> next_{0};
};

}  // namespace fencelock::detail
