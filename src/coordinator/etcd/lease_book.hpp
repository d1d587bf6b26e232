#pragma once
// What the etcd coordinator knows of the leases it granted: each one's etcd lease and the
// moment its max hold ends. etcd keeps no clock a client can read, so max hold is the
// coordinator's to enforce (a renewal that could land past the deadline is refused, and the
// lease runs out on its own within one lease): the deadline is this client's steady clock at the
// send of the granting attempt plus max_hold. Shared by the coordinator and its renewal channels.
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace fencelock::detail::etcd {

struct BookedLease {
    std::int64_t lease_id = 0;
    std::chrono::steady_clock::time_point max_hold_ends{};
};

class LeaseBook {
public:
    /// Records the lease granted to `key` (a lease key: one owner on one resource).
    void add(const std::string& key, BookedLease lease) {
        std::lock_guard lock(mutex_);
        leases_[key] = lease;
    }
    std::optional<BookedLease> find(const std::string& key) const {
        std::lock_guard lock(mutex_);
        const auto it = leases_.find(key);
        if (it == leases_.end()) return std::nullopt;
        return it->second;
    }
    /// Forgets `key`'s lease if it is still `lease_id` (a later grant to the same key stays).
    void remove_if(const std::string& key, std::int64_t lease_id) {
        std::lock_guard lock(mutex_);
        const auto it = leases_.find(key);
        if (it != leases_.end() && it->second.lease_id == lease_id) leases_.erase(it);
    }

private:
    mutable std::mutex mutex_;
    std::unordered_map<std::string, BookedLease> leases_;
};

}  // namespace fencelock::detail::etcd
