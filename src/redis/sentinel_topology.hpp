#pragma once
// The master of a Sentinel-managed group, found the way Redis's guidelines for Sentinel
// clients say (https://redis.io/docs/reference/sentinel-clients/). What to ask and what the
// answers mean (steps 1 and 5) is SentinelResolveFsm and MasterTerm
// (redis/sentinel_resolve_fsm.hpp, no I/O); this topology carries their commands:
//
//  1. Ask the sentinels in turn, each on a short-lived blocking connection with a short
//     timeout (sentinel_query_timeout), `SENTINEL get-master-addr-by-name NAME`. An error, a
//     timeout or a nil answer (this sentinel does not know NAME) moves on to the next one;
//     the first that names a master moves to the front of the list, so the next resolve()
//     asks a sentinel that answered last time first. None answering: errc::unavailable.
//  2. The connection connects there and confirms ROLE is master in its handshake
//     (Topology::follows_master()); any other answer fails that connection with not_master.
//  3. Every new connection asks again: after a connection is lost, after a reply of READONLY,
//     MASTERDOWN or LOADING (the connection leaves that server), after ROLE said replica.
//     Nothing is cached between connects, so no connection can go on using a master the
//     sentinels have replaced once it reconnects; the sentinels' answer is the whole truth.
//
//  4. A watcher thread (started by the first resolve()) subscribes to +switch-master on one
//     sentinel; each switch of this master moves generation() on, and every connection made
//     before it leaves its server before its next command. Without it a connection on the old
//     master would go on writing there after the promotion, until Sentinel demotes it (it then
//     kills the server's normal and pub/sub clients, and writes answer READONLY).
//
//  5. The failover grace (RedisEndpoint::failover_grace): each answer also carries how long
//     that sentinel has seen the master as master (SENTINEL MASTER's role-reported-time, reset
//     at a promotion). grants_from() is that moment plus the grace: a lease the old master
//     granted and never replicated has run out by then. Answers err both ways (a restarted
//     sentinel is too young; one cut off through a failover and back, or whose clock stepped
//     forward, is too old), so the youngest age among a majority of sentinels that name the
//     same master counts (redis/sentinel_views.hpp); fewer agreeing: the whole grace. Estimates
//     are kept per master and config epoch, so a failover that comes back to the same server
//     starts a new grace. A group in its first term owes none (RedisEndpoint::trust_first_term):
//     a majority name the master at config epoch 0 (MasterView::first_term), and the master,
//     asked at each resolve inside the grace over a connection of its own, confirms with INFO
//     that it has been master since it started with nothing to load (started_fresh): there
//     was no earlier master.
#include <chrono>
#include <memory>

#include "fencelock/redis_url.hpp"
#include "redis/topology.hpp"

namespace fencelock::detail {

/// How long one sentinel may take to accept a connection, and then to answer.
inline constexpr std::chrono::milliseconds sentinel_query_timeout{300};

/// The topology of a redis-sentinel:// endpoint (endpoint.uses_sentinel() must hold). Every
/// caller with the same sentinels, master name and sentinel credentials shares one object,
/// so the order learned in step 1 serves all connections of the process.
std::shared_ptr<Topology> sentinel_topology(const RedisEndpoint& endpoint);

}  // namespace fencelock::detail
