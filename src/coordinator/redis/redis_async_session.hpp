#pragma once
// The Redis coordinator's event loop for one asynchronous client: an AsyncLoop (its own
// connection, sharing the coordinator's topology, so that a Sentinel failover moves it too)
// carrying the lock's scripts. Each call is built and decoded by its script's codec in calls/,
// the same the blocking calls use; an attempt that asks for replica acknowledgement sends WAIT
// right after the script, in the same write (replica_ack.hpp).
#include <memory>
#include <string>

#include "coordinator/async_session.hpp"
#include "coordinator/redis/calls/lease_meta.hpp"
#include "redis/async_loop.hpp"
#include "redis/hiredis_connection.hpp"

namespace fencelock::detail {

class RedisAsyncSession final : public AsyncSession {
public:
    /// Opens no connection yet: the loop connects with its first request. `settings` must
    /// name one server or a Sentinel-managed master (the loop does not follow a Cluster).
    RedisAsyncSession(ConnectionSettings settings, std::string key_prefix, HolderMeta holder);

    void attempt(const AttemptRequest& request, Done<AcquireReply> done) override;
    void renew(const ResourceName& resource, const OwnerToken& owner, std::chrono::milliseconds lease,
               Done<RenewReply> done) override;
    void release(const ResourceName& resource, const OwnerToken& owner,
                 const std::optional<AsyncWaitLines::Successor>& successor, Done<ReleaseReply> done) override;
    void leave_line(const ResourceName& resource, const OwnerToken& owner, Done<bool> done) override;
    bool at(steady_time when, Task task) override;
    void hurry() noexcept override;
    bool on_loop_thread() const noexcept override;

private:
    const std::string prefix_;
    const HolderMeta holder_;
    AsyncLoop loop_;  // last: its thread ends before the rest goes
};

}  // namespace fencelock::detail
