#pragma once
// What the demo records: every worker operation, every lease loss, every injected fault. Workers
// write these as JSON lines; the parent merges them into a report and a timeline. Pure data and
// pure functions: unit-tested without servers.
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace fencelock::demo {

/// One read-modify-write: append `id` to `record` under a lease with `fence`.
struct Operation {
    int worker = 0;
    std::string record;
    std::uint64_t fence = 0;
    std::string id;  ///< unique per operation ("w2-17")
    std::int64_t acquired_ns = 0;
    std::int64_t write_ns = 0;  ///< when the write was sent (0: never reached the write)
    std::int64_t end_ns = 0;
    /// applied | stale | not_found | error | aborted (lease lost before writing) | contended
    std::string result;
    /// The last id in the value the worker read, the write its own builds on ("": the record was
    /// empty or nothing was read). A write contains every update along this chain and no other.
    std::string based_on;
};

struct LeaseLost {
    int worker = 0;
    std::string record;
    std::uint64_t fence = 0;
    std::int64_t at_ns = 0;
    std::string reason;
};

/// A fault the parent injected: a pause (SIGSTOP..SIGCONT) or a crash (SIGKILL) of a worker,
/// or a pause of Redis (target "redis").
struct Fault {
    std::string kind;    ///< pause | kill
    std::string target;  ///< "w3" or "redis"
    std::int64_t start_ns = 0;
    std::int64_t end_ns = 0;  ///< == start_ns for a kill
};

struct History {
    std::vector<Operation> operations;
    std::vector<LeaseLost> losses;
    std::vector<Fault> faults;
};

/// A lost update, the write that overwrote it without having seen it, and the stale write of
/// the two: the one whose lease was acquired first, so that it wrote after the other's lease had
/// superseded its own. That is the overwriter when an old holder's late write replaced a newer
/// holder's update, or the lost update itself when an old holder's late write landed after the
/// new holder had read the record, which then wrote over it. A fenced store refuses the culprit.
struct Overwrite {
    std::string lost_id;
    std::string overwriter_id;
    std::string culprit_id;  ///< lost_id or overwriter_id
};

/// Figures of one run, the demo's report.
struct Report {
    std::uint64_t attempted = 0;       ///< operations that sent a write
    std::uint64_t accepted = 0;        ///< writes the store applied (acknowledged appends)
    std::uint64_t stale_rejected = 0;  ///< writes the store refused as stale
    std::uint64_t lost_updates = 0;    ///< acknowledged appends missing from the final records
    /// The ids of those lost updates (overwritten by a write that read the record before them),
    /// so the timeline can mark each one; lost_updates == lost_ids.size().
    std::set<std::string> lost_ids;
    /// What overwrote each lost update and which write was stale (find_overwrites).
    std::vector<Overwrite> overwrites;
    std::uint64_t duplicates = 0;  ///< extra occurrences of an append in the final records
    std::uint64_t leases_lost = 0;
    std::uint64_t aborted = 0;    ///< operations abandoned because the lease was lost first
    std::uint64_t contended = 0;  ///< lock attempts that found the record busy
    std::uint64_t pauses = 0;
    std::uint64_t kills = 0;
};

/// For each of `lost_ids` whose overwriter the history shows, the overwrite, in lost_ids' order.
/// The overwriter is an accepted write to the same record that neither builds on the lost update
/// (its based_on chain does not reach it) nor is built on by it (then it came first), and, of
/// those acknowledged after the lost update was sent, the first acknowledged. The culprit is the
/// one of the two acquired first: judged by acquisition, not fences, which a failover can break.
std::vector<Overwrite> find_overwrites(const History& history, const std::set<std::string>& lost_ids);

/// Splits a record's value into its appended ids (space separated).
std::vector<std::string> appended_ids(const std::string& value);

/// Compares what workers were told (applied) with what the records finally hold.
Report make_report(const History& history, const std::map<std::string, std::string>& final_values);

/// Parses one JSON line written by a worker or the parent into `history`; false if malformed.
bool parse_history_line(const std::string& line, History& history);

/// The JSON lines for each kind of entry.
std::string to_json_line(const Operation& op);
std::string to_json_line(const LeaseLost& loss);
std::string to_json_line(const Fault& fault);

}  // namespace fencelock::demo
