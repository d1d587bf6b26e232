#pragma once
// A linearizability checker for the fault suite's histories, beside fault_history.hpp's property
// checks. Porcupine and Knossos are not at hand, so this is the same search in a few hundred
// lines: Wing & Gong's, with Lowe's memoisation of (ops linearized, model state) pairs.
//
// A history is split per resource (linearizability is local: a history is linearizable iff
// each object's sub-history is, Herlihy & Wing 1990) and each resource's ops are checked
// against three models, each a small pure struct with init() and step():
//
//   mutex            the holds: a hold is split into a lock that must take effect before the
//                    hold began (within its acquire op when one is recorded) and an unlock that
//                    takes effect at some moment after it ended. Two holds are linearizable
//                    iff their intervals do not overlap: one's lock would have to take effect
//                    while the other's lock was still held. (A hold as one atomic op could not
//                    say "nothing else between my start and my end".)
//   fenced register  writes and reads: a write takes effect only with a fence above the last
//                    accepted one, a read returns the last accepted value. A write reported ok
//                    whose fence is not above the one before it is a violation.
//   set              the append-list workload as a set: a write adds its key, which may be
//                    added once; a read sees exactly the elements added before it.
//
// The target's final value is one more read, after every op. Outcomes: `ok` ops must take
// effect between invoke and completion; `unknown` and `invoke` ones may take effect at any time
// after their invoke, or never; `fail` ops are left out (they certainly had no effect; that a
// refusal was right is not checked here). A model a history does not fit (writes without a
// fence for the register, writes without a key for the set) is skipped for that resource and
// says why. The search is bounded: past LinearizabilityOptions::max_states it gives up and the
// model's verdict is `inconclusive`, never a pass or a failure.
#include <cstddef>
#include <cstdint>
#include <expected>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "faults/fault_history.hpp"

namespace fencelock::faults {

/// One operation as a model sees it: a recorded Op, half of a hold, or the final value.
struct LinOp {
    enum class Kind { lock, unlock, write, read, add };
    Kind kind = Kind::read;
    /// lock, unlock: which hold, as 1 + the index of its lock op in the model's op list.
    std::size_t owner = 0;
    /// write: the fence it ran with.
    std::uint64_t fence = 0;
    /// write: the value written (nullopt: not recorded, later reads may see anything until a
    /// read fixes it). read (register): the value seen.
    std::optional<std::string> value{};
    /// add: the element.
    std::string element{};
    /// read (set): the elements seen, sorted, repeats kept.
    std::vector<std::string> elements{};
    /// CLOCK_MONOTONIC ns, as in Op.
    std::int64_t call_ns = 0;
    /// Ignored when `optional`.
    std::int64_t return_ns = 0;
    /// May take effect at any time after call_ns, or never (outcome unknown or invoke; an
    /// unlock). Required ops must take effect within [call_ns, return_ns].
    bool optional = false;
    /// For witnesses: "B write#3 fence 7 key B ok [1.201, 1.305 ms]".
    std::string label{};
};

/// A mutex. State: 0 when free, else the holder's LinOp::owner.
struct MutexModel {
    using State = std::size_t;
    static constexpr std::string_view name = "mutex";
    State init() const { return 0; }
    /// lock when free; unlock by the holder. Anything else does not fit.
    std::optional<State> step(const State& s, const LinOp& op) const;
    std::size_t hash(const State& s) const { return s; }
    /// Why `op` cannot take effect in `s`.
    std::string why(const State& s, const LinOp& op, std::span<const LinOp> ops) const;
};

/// A register that accepts a write only with a fence above the last accepted one.
struct FencedRegisterModel {
    struct State {
        std::uint64_t fence = 0;
        /// nullopt: written by a write whose value was not recorded.
        std::optional<std::string> value = std::string();
        bool operator==(const State&) const = default;
    };
    static constexpr std::string_view name = "fenced register";
    /// Fence 0, value "" (a resource never written).
    State init() const { return {}; }
    std::optional<State> step(const State& s, const LinOp& op) const;
    std::size_t hash(const State& s) const;
    std::string why(const State& s, const LinOp& op, std::span<const LinOp> ops) const;
};

/// A set of elements, each added at most once. State: the elements, sorted.
struct SetModel {
    using State = std::vector<std::string>;
    static constexpr std::string_view name = "set";
    State init() const { return {}; }
    std::optional<State> step(const State& s, const LinOp& op) const;
    std::size_t hash(const State& s) const;
    std::string why(const State& s, const LinOp& op, std::span<const LinOp> ops) const;
};

enum class LinVerdict {
    /// A linearization exists.
    ok,
    /// None exists; ModelResult::detail is a witness.
    violation,
    /// The search hit LinearizabilityOptions::max_states first.
    inconclusive,
    /// The history does not fit the model; ModelResult::detail says why.
    skipped,
};
std::string_view to_string(LinVerdict v) noexcept;

/// One model on one resource.
struct ModelResult {
    std::string model;
    LinVerdict verdict = LinVerdict::ok;
    /// Ops the model was given.
    std::size_t ops = 0;
    /// (ops linearized, state) pairs explored.
    std::size_t states = 0;
    /// violation: the deepest point the search reached and the ops that could not take effect
    /// there, with why. inconclusive, skipped: why.
    std::string detail{};
};

struct ResourceResult {
    std::string resource;
    /// The models that had something to look at (ran, or were skipped for a reason).
    std::vector<ModelResult> models;
    /// violation if any model found one, else inconclusive if any gave up, else ok if any
    /// ran, else skipped.
    LinVerdict verdict() const;
};

struct LinearizabilityReport {
    std::vector<ResourceResult> resources;
    /// Resources whose verdict() is `v`.
    std::size_t count(LinVerdict v) const;
    /// "resource: model: witness", one per model in violation.
    std::vector<std::string> violations() const;
    /// "resource: model inconclusive/skipped: why", one per model that gave up or did not fit.
    std::vector<std::string> notes() const;
    /// The results for one resource only.
    LinearizabilityReport only(const std::string& resource) const;
    /// "linearizable: 2 resources ok (mutex 1, fenced register 2, set 2)", plus the resources
    /// in violation and inconclusive when there are any.
    std::string headline() const;
};

struct LinearizabilityOptions {
    /// (ops linearized, state) pairs one model may explore on one resource before it gives up
    /// with `inconclusive`. Default 100,000: about a second of search; a state is the bitset of
    /// ops linearized plus the model state (a 50-element set: ~2 KB), so at most ~200 MB. The
    /// suite's histories, protected or not, need far fewer.
    std::size_t max_states = 100'000;
};

/// The search (block comment in linearizability.cpp), instantiated for the three models. The
/// models and the mappings below are in linearizability_models.cpp.
template <class Model>
ModelResult linearize(const Model& model, std::span<const LinOp> ops, const LinearizabilityOptions& options);

// History -> model ops, for the ops of ONE resource. Empty: nothing for the model to check.
// unexpected: the history does not fit the model, and why. `final_value` is the target's value
// after every op (a read after all of them), when known.

/// Every ok hold as a lock and an unlock.
std::expected<std::vector<LinOp>, std::string> mutex_ops(std::span<const Op> ops);
/// Writes (each must carry a fence) and ok reads, and the final value.
std::expected<std::vector<LinOp>, std::string> register_ops(std::span<const Op> ops,
                                                            const std::optional<std::string>& final_value);
/// Writes as adds of their key (each must carry one), ok reads as comma-separated lists, and
/// the final value.
std::expected<std::vector<LinOp>, std::string> set_ops(std::span<const Op> ops,
                                                       const std::optional<std::string>& final_value);

/// Every resource of `history` (its ops' and its final values') against every model.
LinearizabilityReport check_linearizability(const History& history, const LinearizabilityOptions& options = {});

}  // namespace fencelock::faults
