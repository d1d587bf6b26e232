#include "redis/connection_pool.hpp"

namespace fencelock::detail {

ConnectionPool::ConnectionPool(Factory factory, std::size_t size)
    : factory_(std::move(factory)), size_(size) {}

ConnectionPool::Borrowed ConnectionPool::borrow() {
    std::unique_lock lock(mutex_);
    returned_.wait(lock, [&] { return !idle_.empty() || created_ < size_; });
    if (!idle_.empty()) {
        auto c = std::move(idle_.back());
        idle_.pop_back();
        return Borrowed(*this, std::move(c));
    }
    ++created_;
    lock.unlock();
    // Creating a connection object does no I/O: it connects on its first command.
    return Borrowed(*this, factory_());
}

void ConnectionPool::give_back(std::unique_ptr<Connection> c) {
    {
        std::lock_guard lock(mutex_);
        idle_.push_back(std::move(c));
    }
    returned_.notify_one();
}

}  // namespace fencelock::detail
