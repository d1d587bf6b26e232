#pragma once
// Wakes a lock's waiters when its key is deleted (a release, an expiry, a force-release), from an
// etcd Watch on the resource's range, instead of leaving them to poll: etcd's counterpart of the
// Redis release notifier (coordinator/redis/release_notifier.hpp).
//
// One thread per client reads one Watch stream; a resource's range is watched (DELETE events
// only) while a thread of this client waits for it. A watch that etcd confirmed (`created`) sees
// every delete after it, so an attempt sent after the confirmation cannot miss the next release.
// Events are hints: a waiter still takes the lock through its own attempt, so a lost or late one
// delays a waiter (its timer is the fallback) but never lets two hold the lock. A broken stream
// wakes every waiter (each looks for itself) and is opened again with its watches.
#include <memory>
#include <stop_token>
#include <string>
#include <thread>

#include "coordinator/coordinator.hpp"
#include "coordinator/etcd/etcd_keys.hpp"
#include "coordinator/etcd/etcd_rpc.hpp"

namespace fencelock::detail::etcd {

class EtcdReleaseWatch {
public:
    EtcdReleaseWatch(RpcSettings settings, EtcdKeys keys);
    /// Ends the stream and joins the thread. No waiter may be left.
    ~EtcdReleaseWatch();
    EtcdReleaseWatch(const EtcdReleaseWatch&) = delete;
    EtcdReleaseWatch& operator=(const EtcdReleaseWatch&) = delete;

    /// Enters the back of this client's local line for `resource`, watching it if needed.
    std::unique_ptr<WatchSeat> join(const ResourceName& resource, const std::string& owner);
    /// Whether a thread of this client waits for `resource`.
    bool has_waiters(const ResourceName& resource) const;
    /// Whether `resource`'s watch stands confirmed now.
    bool watching(const ResourceName& resource) const;

    struct State;

private:
    void run(std::stop_token stop);

    std::shared_ptr<State> state_;
    std::jthread thread_;
};

}  // namespace fencelock::detail::etcd
