#pragma once
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "redis/connection.hpp"

namespace fencelock::detail {

/// Up to `size` connections shared by the threads of one client. A caller borrows one for a
/// single command (or script) and gives it back; when all are busy it waits for one.
class ConnectionPool {
public:
    using Factory = std::function<std::unique_ptr<Connection>()>;

    ConnectionPool(Factory factory, std::size_t size);

    class Borrowed {
    public:
        Borrowed(ConnectionPool& pool, std::unique_ptr<Connection> c) : pool_(&pool), c_(std::move(c)) {}
        Borrowed(Borrowed&&) = default;
        Borrowed& operator=(Borrowed&&) = delete;
        ~Borrowed() { if (c_) pool_->give_back(std::move(c_)); }
        Connection& operator*() const noexcept { return *c_; }
        Connection* operator->() const noexcept { return c_.get(); }

    private:
        ConnectionPool* pool_;
        std::unique_ptr<Connection> c_;
    };

    Borrowed borrow();

private:
    void give_back(std::unique_ptr<Connection> c);

    Factory factory_;
    std::size_t size_;
    std::size_t created_ = 0;
    std::mutex mutex_;
    std::condition_variable returned_;
    std::vector<std::unique_ptr<Connection>> idle_;
};

}  // namespace fencelock::detail
