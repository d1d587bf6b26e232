#pragma once
// How long the master may be assumed to have been master, from what the sentinels say.
//
// Each sentinel reports, in SENTINEL MASTER, how long it has seen the master in that role
// (role-reported-time, reset when it switches to a new master address). An answer can err
// either way:
//  - late (too young): a sentinel that restarted, or learned of the promotion after the
//    fact, knows the master only since then;
//  - early (too old): a sentinel cut off through a failover A -> B and the failover back
//    B -> A never saw B, so it only bumps the config epoch and keeps A's old record; a
//    sentinel whose wall clock stepped forward adds the step to every age (Sentinel measures
//    ages with mstime()).
// A late answer only lengthens the grace (a stall); an early one would shorten it (an
// overlap). So the *youngest* age counts, among a majority of the configured sentinels that
// name the same master: any two majorities share a sentinel, so as long as fewer than half of
// the sentinels err early, every majority holds one that does not, and the youngest age of a
// majority is no older than the truth. Fewer agreeing answers than a majority: age zero, the
// whole grace (fail closed: a stall, never an overlap).
//
// The first term. A majority at config epoch 0 says Sentinel never failed this group over, but
// people can make epoch 0 lie on every sentinel at once: promote a server by hand, or create
// the sentinels' configuration again after a promotion (`sentinel monitor` anew, a
// sentinel.conf rendered from a template at each start). So epoch 0 waives the grace only when
// the master confirms it from its own state (started_fresh): no promotion since it started
// (a promotion, by Sentinel, FAILOVER or REPLICAOF NO ONE, keeps the old replication id as
// master_replid2 and sets second_repl_offset) and nothing loaded at start (a restart from an
// RDB or AOF file erases that evidence, and could follow a recent promotion). What remains
// is a server promoted, then restarted with nothing to load, with the sentinels re-created,
// all within one grace: a restart that lost every key, which loses leases with or without
// Sentinel (docs/DESIGN.md, "The failover grace").
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "redis/topology.hpp"

namespace fencelock::detail {

/// One sentinel's SENTINEL MASTER record of the master it names.
struct MasterView {
    std::chrono::milliseconds age{0};  ///< role-reported-time
    std::uint64_t epoch = 0;           ///< config-epoch
    /// Set by youngest_agreeing_view only: a majority agree on the master and the newest
    /// config-epoch among them is 0. Every Sentinel failover (automatic or SENTINEL FAILOVER)
    /// gives the promoted master an epoch of 1 or more, and a sentinel that missed one can only
    /// report an older epoch; so a majority at epoch 0 says this group never failed over, as
    /// far as Sentinel did the failing over. People can make it lie: a server promoted by hand,
    /// or sentinels whose configuration is created again (`sentinel monitor`, a sentinel.conf
    /// from a template at each start), start at epoch 0 with a master that succeeded another,
    /// and such errors hit every sentinel at once. Unlike a young age, which only lengthens the
    /// grace, a false epoch 0 would cut it: so it counts only with the master's own word
    /// (started_fresh) and RedisEndpoint::trust_first_term.
    bool first_term = false;
};

/// One sentinel's answer: the master it names and, when readable, its view of it.
struct SentinelAnswer {
    ServerAddress master;
    std::optional<MasterView> view;
};

/// How many agreeing answers decide: a majority of `configured` sentinels.
constexpr std::size_t sentinel_majority(std::size_t configured) noexcept { return configured / 2 + 1; }

/// The youngest view of `master` among `answers` (nullopt entries: no answer), when at least
/// sentinel_majority(configured) of them name `master` with a readable view; else age zero.
/// The epoch is the newest among those views; first_term says whether that epoch is 0 with a
/// majority agreeing.
MasterView youngest_agreeing_view(const std::vector<std::optional<SentinelAnswer>>& answers,
                                  const ServerAddress& master, std::size_t configured) noexcept;

/// Whether the master's own INFO replication and INFO persistence texts say it has been master
/// since it started, started with nothing to load, and has not been promoted since:
/// role:master, second_repl_offset:-1, loading:0 and async_loading:0 (a load under way counts
/// its keys from 0), rdb_last_load_keys_loaded:0 (Redis 7.0 and later; a server that does not
/// say is not fresh) and aof_enabled:0 (an AOF made only of commands loads without counting
/// keys). Anything unreadable: false.
bool started_fresh(std::string_view info_replication, std::string_view info_persistence) noexcept;

}  // namespace fencelock::detail
