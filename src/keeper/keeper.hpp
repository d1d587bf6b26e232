#pragma once
// The keeper: one thread and one connection that renew every kept lease of a client, batching
// all renewals that are due into one pipelined round trip.
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "keeper/kept_lease.hpp"
#include "redis/connection.hpp"
#include "redis/connection_pool.hpp"

namespace fencelock::detail {

class Keeper {
public:
    /// `connection` is the keeper thread's own; `pool` serves releases from handle threads.
    Keeper(std::unique_ptr<Connection> connection, std::shared_ptr<ConnectionPool> pool, std::string key_prefix,
           std::shared_ptr<LockObserver> observer);
    ~Keeper();

    /// Registers a lease before its acquisition is sent; it is not renewed while pending.
    void add(const std::shared_ptr<KeptLease>& lease);
    /// Starts renewing a lease whose acquisition Redis confirmed.
    void activate(const std::shared_ptr<KeptLease>& lease, steady_time sent, std::chrono::milliseconds ttl,
                  FencingToken fence);
    /// Stops renewing: waits for a renewal of this lease already on the wire, then forgets it.
    /// After this returns no renewal of the lease will be sent.
    void remove(const std::shared_ptr<KeptLease>& lease);

    KeeperStats stats();

    /// Compare-and-delete on a pooled connection (never the keeper thread's).
    std::expected<ReleaseStatus, std::error_code> release(const KeptLease& lease);

private:
    void run(std::stop_token stop);
    void renew_batch(std::vector<std::shared_ptr<KeptLease>>& due, std::vector<std::shared_ptr<KeptLease>>& lost);
    void mark_lost(KeptLease& lease, LossReason reason, std::vector<std::shared_ptr<KeptLease>>& lost,
                   const std::shared_ptr<KeptLease>& ptr);

    std::unique_ptr<Connection> connection_;
    std::shared_ptr<ConnectionPool> pool_;
    const std::string prefix_;
    const std::shared_ptr<LockObserver> observer_;
    std::mutex mutex_;
    std::condition_variable_any changed_;
    std::vector<std::shared_ptr<KeptLease>> leases_;
    bool dirty_ = false;
    KeeperStats stats_;
    std::jthread thread_;  // last member: started after, and joined before, the rest
};

}  // namespace fencelock::detail
