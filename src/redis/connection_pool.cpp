#include "redis/connection_pool.hpp"

namespace fencelock::detail {

ConnectionPool::ConnectionPool(const Factory& factory, std::size_t size) {
    connections_.reserve(size);
    for (std::size_t i = 0; i < size; ++i) connections_.push_back(factory());
}

ConnectionPool::Borrowed ConnectionPool::borrow() {
    const std::size_t i = next_.fetch_add(1, std::memory_order_relaxed) % connections_.size();
    return Borrowed(*connections_[i]);
}

}  // namespace fencelock::detail
