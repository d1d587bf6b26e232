#pragma once
// The fault suite's history checker.
//
// Every worker (thread or process) records what it did as operations with an invoke time, a
// completion time and an outcome; the target records what it accepted, in order. After a
// scenario the test merges both and checks properties that must hold whatever the fault was:
//
//   (a) fence_order   accepted fences strictly increase per resource (no stale write got in)
//   (b) exclusion     no two holders of a resource overlap while both believed their lease
//                     valid (a "hold" op spans acquire-return .. the last validity check)
//   (c) final_state   the final value is exactly the acknowledged writes: nothing lost,
//                     nothing duplicated, nothing from a write reported as failed
//   (d) idempotency   at most one accepted effect per idempotency key
//   (e) completion    every op ends ok, fail or unknown, within a bound
//
// and, when CheckOptions::leases is on (scenarios whose fence source may go back in time: a
// failover, a restart without persistence), two checks of the fences themselves:
//
//   (f) unique_fence  no fence of a resource was issued to two acquisitions
//   (g) lease_order   no write of an older lease was accepted after a write of a newer one,
//                     leases ordered by when the harness saw them granted (real time)
//
// Times are CLOCK_MONOTONIC nanoseconds: one clock shared by every process on the machine,
// so histories written by different processes can be compared directly.
//
// Outcomes follow the usual convention for histories with uncertainty: `fail` means the op
// certainly had no effect, `unknown` means it may or may not have (a lost reply), and `invoke`
// means no completion was ever recorded (the worker died or hung).
#include <time.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fencelock::faults {

/// CLOCK_MONOTONIC in ns.
inline std::int64_t now_ns() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

enum class OpKind { acquire, read, write, release, hold, job };
enum class Outcome { invoke, ok, fail, unknown };

std::string_view to_string(OpKind k) noexcept;
std::string_view to_string(Outcome o) noexcept;

/// One operation of one worker.
struct Op {
    /// Who did it: a process or thread name, unique within the scenario.
    std::string process;
    /// Unique per process; pairs the invoke record with its completion.
    std::uint64_t id = 0;
    OpKind kind = OpKind::job;
    std::string resource;
    std::int64_t invoke_ns = 0;
    /// 0 while outcome == invoke.
    std::int64_t complete_ns = 0;
    Outcome outcome = Outcome::invoke;
    /// The fence the op ran with (write, hold) or obtained (acquire); 0 for none.
    std::uint64_t fence = 0;
    /// read: the value seen. write: the value written.
    std::string value;
    /// write: the element it appends, which is also its idempotency key. job: the job id.
    std::string key;
    /// Free text for people: "stale", an error name, a loss reason.
    std::string note;
};

/// A write the target accepted, in the target's order.
struct AcceptedWrite {
    std::uint64_t seq = 0;
    std::string resource;
    std::uint64_t fence = 0;
    std::string value;
    std::string key;
};

/// Records the ops of one worker into a JSON-lines file (one line per event, appended with a
/// single write(2), so a SIGKILL loses at most the op in progress). Thread-safe.
class Recorder {
public:
    Recorder(std::string process, std::filesystem::path file);
    ~Recorder();
    Recorder(const Recorder&) = delete;
    Recorder& operator=(const Recorder&) = delete;

    /// Records the start of an op and returns its id.
    std::uint64_t invoke(OpKind kind, const std::string& resource, std::uint64_t fence = 0,
                         const std::string& value = {}, const std::string& key = {});
    /// Records how op `id` ended. A non-zero fence / non-empty value replaces the invoke's.
    void complete(std::uint64_t id, Outcome outcome, std::uint64_t fence = 0, const std::string& value = {},
                  const std::string& note = {});
    /// Records a critical section in one line: from when acquire returned to the last moment
    /// the holder checked that its lease was still valid.
    void hold(const std::string& resource, std::uint64_t fence, std::int64_t start_ns, std::int64_t end_ns);

    const std::string& process() const noexcept { return process_; }

private:
    void append(const std::string& line);
    std::string process_;
    int fd_ = -1;
    std::mutex mutex_;
    std::uint64_t next_id_ = 1;
};

/// Reads every `*.jsonl` file in `dir` and pairs invokes with completions.
std::vector<Op> load_ops(const std::filesystem::path& dir);
/// Reads the ops of one file.
std::vector<Op> load_ops_file(const std::filesystem::path& file);

/// Everything the checks look at.
struct History {
    std::vector<Op> ops;
    /// The target's accepted writes, in its order.
    std::vector<AcceptedWrite> accepted;
    /// Final value of each resource in the target.
    std::map<std::string, std::string> final_values;
};

/// The part of a history that concerns one resource.
History only(const History& history, const std::string& resource);

/// What the final value of a resource must be, given the write ops against it. Returns one
/// message per discrepancy. A model encodes the target's semantics; see append_list_model().
using FinalStateModel = std::function<std::vector<std::string>(
    const std::string& resource, const std::string& final_value, std::span<const Op> writes)>;

/// The append-list target: a value is a comma-separated list; every write appends its `key`
/// (unique per job) to what it read. Keys of writes acknowledged ok must appear exactly once;
/// keys whose writes all failed must not appear; keys of unknown outcome at most once; no
/// element may appear that no write carried.
FinalStateModel append_list_model();

struct CheckOptions {
    /// Bound for (e): an op taking longer than this (invoke to completion) is a violation.
    std::chrono::milliseconds completion_bound{std::chrono::seconds(30)};
    FinalStateModel model = append_list_model();
    /// Runs (f) and (g). Off by default: a counter that regresses by design (Redis restarted
    /// without persistence) reissues fences, which the scenarios built for that expect.
    bool leases = false;
    /// [from_ns, until_ns) spans in which leases were granted that are known not to have
    /// reached the server that later took over (replication cut, an empty restarted master):
    /// their holds are left out of (b) (see without_holds_begun_in).
    std::vector<std::pair<std::int64_t, std::int64_t>> not_replicated{};
};

/// Violations per property, one human-readable line each.
struct Report {
    std::vector<std::string> fence_order;
    std::vector<std::string> exclusion;
    std::vector<std::string> final_state;
    std::vector<std::string> idempotency;
    std::vector<std::string> completion;
    std::vector<std::string> unique_fence;
    std::vector<std::string> lease_order;
    /// Stale writes the target accepted, counted: a fence not newer than one accepted before
    /// (fence_order), and with CheckOptions::leases a write of a lease older than one whose
    /// write was accepted before it (lease_order).
    std::size_t stale_accepted = 0;

    std::size_t total() const noexcept {
        return fence_order.size() + exclusion.size() + final_state.size() + idempotency.size() + completion.size() +
               unique_fence.size() + lease_order.size();
    }
    /// Every violation, prefixed with its property.
    std::vector<std::string> all() const;
};

// The individual checks (each usable on its own from unit tests).
std::vector<std::string> check_fence_order(std::span<const AcceptedWrite> accepted);
std::size_t count_stale_accepted(std::span<const AcceptedWrite> accepted);
std::vector<std::string> check_exclusion(std::span<const Op> ops);
std::vector<std::string> check_final_state(std::span<const Op> ops, const std::map<std::string, std::string>& finals,
                                           const FinalStateModel& model);
std::vector<std::string> check_idempotency(std::span<const AcceptedWrite> accepted);
std::vector<std::string> check_completion(std::span<const Op> ops, std::chrono::milliseconds bound);
std::vector<std::string> check_unique_fences(std::span<const Op> ops);
/// Each accepted write is traced to its lease through its key (the write op carrying it) and
/// that op's process and fence (the acquire op that returned them). Writes that cannot be
/// traced (no acquire op recorded) are left out.
std::vector<std::string> check_lease_order(std::span<const Op> ops, std::span<const AcceptedWrite> accepted);

/// `ops` without the holds that began in [from_ns, until_ns): after a failover, the leases
/// granted while the old master's writes were not reaching the replica are not expected to
/// exclude anyone (asynchronous replication); check_exclusion on the rest checks every lease
/// that did reach the promoted replica.
std::vector<Op> without_holds_begun_in(std::span<const Op> ops, std::int64_t from_ns, std::int64_t until_ns);

Report check(const History& history, const CheckOptions& options = {});

}  // namespace fencelock::faults
