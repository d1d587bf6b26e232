#include "coordinator/redis/calls/acquire_call.hpp"

#include "coordinator/redis/calls/reply_fields.hpp"
#include "coordinator/redis/keys.hpp"
#include "coordinator/redis/replica_ack.hpp"
#include "coordinator/redis/scripts.hpp"
#include "redis/script_runner.hpp"

namespace fencelock::detail {
namespace {

constexpr std::int64_t refused = 0;
constexpr std::int64_t granted = 1;
constexpr std::int64_t fair_waiters_turn = 1;  // third element of a refusal
constexpr std::int64_t already_ours = 1;       // fourth element of a grant
constexpr std::int64_t handed_to_us = 2;       // the same, for a lease a release handed on

// ARGV[5]: where a refused attempt waits.
const char* wait_mode(WaitPlace place) {
    switch (place) {
        case WaitPlace::fair_line: return "1";
        case WaitPlace::sleepers: return "2";
        case WaitPlace::none: break;
    }
    return "0";
}

}  // namespace

std::expected<AcquireReply, std::error_code> decode_acquire(const Reply& reply) {
    using std::chrono::milliseconds;
    std::int64_t flag = 0, ttl = 0, reacquired = 0;
    if (!is_array(reply, 1) || !as_int(reply.elements[0], flag)) return malformed_reply();
    AcquireReply out;
    if (flag == refused) {
        std::int64_t queued = 0;
        const auto n = reply.elements.size();
        if (n < 2 || n > 4 || !as_int(reply.elements[1], ttl)) return malformed_reply();
        if (n >= 3 && (!as_int(reply.elements[2], queued) || (queued != 0 && queued != fair_waiters_turn)))
            return malformed_reply();
        // {0, ms, 0} (or a nil fence, from an older script): a holder's hash without a fence;
        // nothing is granted, so the fence is only unknown (a grant message is then always
        // confirmed).
        if (n == 4 && reply.elements[3].kind != Reply::Kind::nil) {
            FencingToken seen{0};
            // The holder's fence as the lease hash holds it: damage there is a corrupt key.
            if (!as_fence(reply.elements[3], seen)) return corrupt_key();
            out.seen_fence = seen;
        }
        out.ttl = milliseconds(ttl);
        out.queued = queued == fair_waiters_turn;
        return out;
    }
    if (flag != granted) return malformed_reply();
    // A lease hash missing its fence makes Lua truncate the reply table at the nil.
    const auto n = reply.elements.size();
    if (n < 4 || n > 5 || !as_fence(reply.elements[1], out.fence)) return corrupt_key();
    if (!as_int(reply.elements[2], ttl) || !as_int(reply.elements[3], reacquired)) return malformed_reply();
    if (n == 5) {
        std::int64_t lead = 0;
        if (!as_int(reply.elements[4], lead) || lead <= 0) return malformed_reply();
        out.clock_behind = std::chrono::microseconds(lead);
    }
    out.acquired = true;
    out.ttl = milliseconds(ttl);
    out.reacquired = reacquired == already_ours || reacquired == handed_to_us;
    out.handed = reacquired == handed_to_us;
    return out;
}

std::chrono::milliseconds waiter_slot(const AcquireOptions& options) {
    // A waiter tries again at least every backoff.max (see LockClient::Impl::acquire_loop);
    // twice that plus slack for a slow round trip keeps a live waiter's place.
    return 2 * options.backoff.max + std::chrono::seconds(2);
}

OwnedScriptCall acquire_script_call(std::string_view prefix, const ResourceName& resource, const OwnerToken& owner,
                                    const AcquireOptions& options, const HolderMeta& holder, WaitPlace place,
                                    LocalLine local_line, DirectGrants direct) {
    auto keys = make_keys(prefix, resource);
    OwnedScriptCall call{{std::move(keys.lock), std::move(keys.fence), std::move(keys.waiters),
                          std::move(keys.waiter_deadlines), std::move(keys.sleepers), std::move(keys.handoff)},
                         {owner.str(), std::to_string(options.lease.count()), std::to_string(options.max_hold.count()),
                          holder_text(holder), wait_mode(place), std::to_string(waiter_slot(options).count())}};
    // ARGV[7] and ARGV[8] read as '0' when absent: each argument costs Redis a copy into Lua.
    if (local_line == LocalLine::waiting || direct != DirectGrants::refused) {
        call.args.push_back(local_line == LocalLine::waiting ? "1" : "0");
        if (direct != DirectGrants::refused) {
            call.args.push_back(direct == DirectGrants::taken ? "1" : "2");
            if (!holder.client_id.empty()) call.args.push_back(holder.client_id);
        }
    }
    return call;
}

std::expected<AcquireReply, std::error_code> decode_acquire_batch(const BatchThen& batch, const ReplicaAck& ack) {
    if (batch.results.size() != 1) return malformed_reply();
    if (!batch.results.front()) return std::unexpected(batch.results.front().error());
    auto decoded = decode_acquire(*batch.results.front());
    if (ack.on() && decoded && decoded->acquired)
        decoded->unreplicated = replication_shortfall(ack, decode_wait(batch.then));
    return decoded;
}

std::expected<AcquireReply, std::error_code> acquire_once(Connection& c, std::string_view prefix,
                                                          const ResourceName& resource, const OwnerToken& owner,
                                                          const AcquireOptions& options, const HolderMeta& holder,
                                                          WaitPlace place, LocalLine local_line, DirectGrants direct) {
    const OwnedScriptCall owned =
        acquire_script_call(prefix, resource, owner, options, holder, place, local_line, direct);
    const ScriptCall call = owned.view();
    const ReplicaAck ack = replica_ack(options);
    if (!ack.on()) {
        auto reply = run_script(c, scripts::acquire, call);
        if (!reply) return std::unexpected(reply.error());
        return decode_acquire(*reply);
    }
    const WaitCommand wait(ack);
    const auto wait_argv = wait.argv();
    auto batch = run_script_batch_then(c, scripts::acquire, std::span(&call, 1), wait_argv);
    if (!batch) return std::unexpected(batch.error());
    return decode_acquire_batch(*batch, ack);
}

}  // namespace fencelock::detail
