#include "coordinator/redis/redis_async_session.hpp"

#include <utility>
#include <vector>

#include "coordinator/redis/calls/acquire_call.hpp"
#include "coordinator/redis/calls/leave_line_call.hpp"
#include "coordinator/redis/calls/release_call.hpp"
#include "coordinator/redis/calls/renew_call.hpp"
#include "coordinator/redis/redis_coordinator.hpp"
#include "coordinator/redis/replica_ack.hpp"
#include "coordinator/redis/scripts.hpp"
#include "fencelock/error.hpp"
#include "redis/async_script.hpp"

namespace fencelock::detail {
namespace {

using Batch = std::expected<BatchThen, std::error_code>;

// The WAIT that follows an attempt asking for replica acknowledgement, else nothing.
std::vector<std::string> wait_argv(const ReplicaAck& ack) {
    if (!ack.on()) return {};
    const WaitCommand wait(ack);
    const auto argv = wait.argv();
    return {argv.begin(), argv.end()};
}

// A batch of one script call (nothing after it) decoded by its codec's `decode`: a transport
// error, or a batch that is not one reply (protocol_error), comes back as the error.
template <typename Decode>
auto decode_single(const Batch& batch, Decode decode) -> decltype(decode(std::declval<const Reply&>())) {
    if (!batch) return std::unexpected(batch.error());
    if (batch->results.size() != 1) return std::unexpected(make_error_code(errc::protocol_error));
    const auto& reply = batch->results.front();
    if (!reply) return std::unexpected(reply.error());
    return decode(*reply);
}

}  // namespace

RedisAsyncSession::RedisAsyncSession(ConnectionSettings settings, std::string key_prefix, HolderMeta holder)
    : prefix_(std::move(key_prefix)), holder_(std::move(holder)), loop_(std::move(settings)) {}

void RedisAsyncSession::attempt(const AttemptRequest& r, Done<AcquireReply> done) {
    const ReplicaAck ack = replica_ack(r.options);
    run_script_async(
        loop_, scripts::acquire,
        acquire_script_call(prefix_, r.resource, r.owner, r.options, holder_, r.place, r.local_line, r.direct),
        wait_argv(ack), [ack, done = std::move(done)](Batch batch) mutable {
            done(batch ? decode_acquire_batch(*batch, ack) : std::unexpected(batch.error()));
        });
}

void RedisAsyncSession::renew(const ResourceName& resource, const OwnerToken& owner, std::chrono::milliseconds lease,
                              Done<RenewReply> done) {
    run_script_async(loop_, scripts::renew, renew_script_call(prefix_, resource, owner, lease), {},
                     [done = std::move(done)](Batch batch) mutable { done(decode_single(batch, decode_renew)); });
}

// The successor is named by the client's id and holder text (lib/handoff.lua): it is granted
// the whole lease when its own place comes first.
void RedisAsyncSession::release(const ResourceName& resource, const OwnerToken& owner,
                                const std::optional<AsyncWaitLines::Successor>& successor, Done<ReleaseReply> done) {
    const auto named = successor ? std::optional<Successor>({successor->owner, successor->lease, successor->max_hold})
                                 : std::nullopt;
    auto call = release_script_call(prefix_, resource, owner, &holder_, named ? &*named : nullptr);
    const auto sent = std::chrono::steady_clock::now();
    run_script_async(loop_, scripts::release, std::move(call), {}, [sent, done = std::move(done)](Batch batch) mutable {
        auto reply = decode_single(batch, decode_release_reply);
        if (reply && reply->granted) reply->granted->grant.release_sent = sent;  // its TTL began later
        done(std::move(reply));
    });
}

void RedisAsyncSession::leave_line(const ResourceName& resource, const OwnerToken& owner, Done<bool> done) {
    run_script_async(loop_, scripts::leave_line, leave_line_script_call(prefix_, resource, owner), {},
                     [done = std::move(done)](Batch batch) mutable { done(decode_single(batch, decode_leave_line)); });
}

bool RedisAsyncSession::at(steady_time when, Task task) { return loop_.post_at(when, std::move(task)); }

void RedisAsyncSession::hurry() noexcept { loop_.hurry(); }

bool RedisAsyncSession::on_loop_thread() const noexcept { return loop_.on_loop_thread(); }

// The loop speaks to one server: a Cluster's asynchronous client runs on threads instead.
std::unique_ptr<AsyncSession> RedisCoordinator::async_session() {
    if (!capabilities().async_loop) return nullptr;
    return std::make_unique<RedisAsyncSession>(settings_, prefix_, holder_);
}

}  // namespace fencelock::detail
