#include "faults/linearizability.hpp"

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <tuple>
#include <unordered_set>

namespace fencelock::faults {
namespace {

// The search's entries: a call or a return of an op, in a doubly linked list (indices; node 0
// is the head).
constexpr std::size_t nil = std::numeric_limits<std::size_t>::max();

struct Event {
    std::int64_t t;
    bool is_return;
    std::size_t op;
};

struct Node {
    std::size_t op = 0;
    bool call = false;
    std::size_t prev = nil, next = nil, match = nil;
};

}  // namespace

// ---- the search ---------------------------------------------------------------------------

/*
 * Why the search is right (Wing & Gong 1993, with Lowe's memoisation, 2017; Porcupine's
 * algorithm).
 *
 * Every op becomes a call entry at call_ns and, unless it is optional, a return entry at
 * return_ns; entries are sorted by time, a call before a return at the same instant (ops that
 * touch count as concurrent, so clock granularity never makes a violation). The search keeps
 * the entries not yet linearized in a linked list. At each step the candidates are the calls
 * before the first return entry in the list: exactly the ops that may take effect next, since
 * an op called after some pending op returned must come after it. The search tries them in
 * list order; a candidate the model accepts is linearized (both its entries unlinked, the state
 * advanced, the choice pushed) and the search restarts from the head. Reaching a return entry
 * means that op had to take effect by then and cannot: the last choice is undone (entries
 * relinked in reverse, which restores the list exactly) and the next candidate after it tried.
 * So every order consistent with real time is tried, and the search fails only when no
 * linearization exists.
 *
 * Memoisation: whether the rest can be linearized depends only on which ops are linearized
 * (that fixes the list) and the model state. A pair seen before either led to a failure, or
 * the search would have ended with success, so it is not explored twice.
 *
 * Optional ops have no return entry: they never limit the candidates and never have to be
 * linearized. The search succeeds once every required op is linearized; an optional op left
 * out took no effect, one linearized took effect at that point. Both are possible when a
 * reply was lost, and both are tried.
 */
template <class Model>
ModelResult linearize(const Model& model, std::span<const LinOp> ops, const LinearizabilityOptions& options) {
    using State = typename Model::State;
    ModelResult result{.model = std::string(Model::name), .verdict = LinVerdict::ok, .ops = ops.size()};

    std::vector<Event> events;
    std::size_t required = 0;
    for (std::size_t i = 0; i < ops.size(); ++i) {
        events.push_back({ops[i].call_ns, false, i});
        if (ops[i].optional) continue;
        events.push_back({std::max(ops[i].call_ns, ops[i].return_ns), true, i});
        ++required;
    }
    std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
        return std::tie(a.t, a.is_return, a.op) < std::tie(b.t, b.is_return, b.op);
    });
    std::vector<Node> nodes(events.size() + 1);  // nodes[0]: the head
    std::vector<std::size_t> call_of(ops.size());
    for (std::size_t k = 0; k < events.size(); ++k) {
        Node& n = nodes[k + 1];
        n.op = events[k].op;
        n.call = !events[k].is_return;
        n.prev = k;
        nodes[k].next = k + 1;
        if (n.call) call_of[n.op] = k + 1;
        else nodes[call_of[n.op]].match = k + 1;
    }
    auto unlink = [&](std::size_t x) {
        nodes[nodes[x].prev].next = nodes[x].next;
        if (nodes[x].next != nil) nodes[nodes[x].next].prev = nodes[x].prev;
    };
    auto relink = [&](std::size_t x) {
        nodes[nodes[x].prev].next = x;
        if (nodes[x].next != nil) nodes[nodes[x].next].prev = x;
    };

    struct Seen {
        std::vector<std::uint64_t> bits;
        State state;
        bool operator==(const Seen&) const = default;
    };
    auto seen_hash = [&model](const Seen& s) {
        std::size_t h = model.hash(s.state);
        for (auto w : s.bits) h = h * 1'000'003 ^ std::hash<std::uint64_t>()(w);
        return h;
    };
    std::unordered_set<Seen, decltype(seen_hash)> seen(64, seen_hash);
    struct Frame {
        std::size_t node;
        State before;
    };
    std::vector<Frame> stack;
    std::vector<std::uint64_t> bits((ops.size() + 63) / 64);
    State state = model.init();
    std::size_t deepest = 0;
    bool have_witness = false;

    // The deepest dead end: what was linearized, and every candidate with why it cannot be next.
    auto witness = [&](std::size_t stop) {
        std::string s = "after " + std::to_string(stack.size()) + " of " + std::to_string(ops.size()) + " ops";
        if (!stack.empty()) s += " (last: " + ops[nodes[stack.back().node].op].label + ")";
        s += " none can take effect next:";
        std::size_t shown = 0;
        for (std::size_t e = nodes[0].next; e != nil && e != stop && shown < 4; e = nodes[e].next) {
            if (!nodes[e].call) continue;
            const LinOp& op = ops[nodes[e].op];
            const bool fits = model.step(state, op).has_value();
            s += std::string(shown++ ? ";" : "") + " " + op.label + ": " +
                 (fits ? "every order after it fails" : model.why(state, op, ops));
        }
        return s;
    };

    std::size_t e = nodes[0].next;
    while (required > 0) {
        if (e != nil && nodes[e].call) {
            const std::size_t i = nodes[e].op;
            if (auto next = model.step(state, ops[i])) {
                bits[i / 64] |= std::uint64_t{1} << (i % 64);
                if (seen.insert(Seen{bits, *next}).second) {
                    if (seen.size() > options.max_states) {
                        result.verdict = LinVerdict::inconclusive;
                        result.states = seen.size();
                        result.detail = "gave up after " + std::to_string(options.max_states) +
                                        " states (LinearizabilityOptions::max_states)";
                        return result;
                    }
                    stack.push_back({e, std::move(state)});
                    state = std::move(*next);
                    if (!ops[i].optional) --required;
                    unlink(e);
                    if (nodes[e].match != nil) unlink(nodes[e].match);
                    e = nodes[0].next;
                    continue;
                }
                bits[i / 64] &= ~(std::uint64_t{1} << (i % 64));
            }
            e = nodes[e].next;
            continue;
        }
        // A return entry: that op had to take effect by now. Undo the last choice.
        if (!have_witness || stack.size() > deepest) {
            deepest = stack.size();
            have_witness = true;
            result.detail = witness(e);
        }
        if (stack.empty()) {
            result.verdict = LinVerdict::violation;
            result.states = seen.size();
            return result;
        }
        Frame top = std::move(stack.back());
        stack.pop_back();
        const std::size_t i = nodes[top.node].op;
        bits[i / 64] &= ~(std::uint64_t{1} << (i % 64));
        if (!ops[i].optional) ++required;
        state = std::move(top.before);
        if (nodes[top.node].match != nil) relink(nodes[top.node].match);
        relink(top.node);
        e = nodes[top.node].next;
    }
    result.states = seen.size();
    result.detail.clear();
    return result;
}

template ModelResult linearize<MutexModel>(const MutexModel&, std::span<const LinOp>, const LinearizabilityOptions&);
template ModelResult linearize<FencedRegisterModel>(const FencedRegisterModel&, std::span<const LinOp>,
                                                    const LinearizabilityOptions&);
template ModelResult linearize<SetModel>(const SetModel&, std::span<const LinOp>, const LinearizabilityOptions&);

// ---- the report ---------------------------------------------------------------------------

std::string_view to_string(LinVerdict v) noexcept {
    switch (v) {
        case LinVerdict::ok: return "ok";
        case LinVerdict::violation: return "violation";
        case LinVerdict::inconclusive: return "inconclusive";
        case LinVerdict::skipped: return "skipped";
    }
    return "skipped";
}

LinVerdict ResourceResult::verdict() const {
    auto any = [&](LinVerdict v) {
        return std::any_of(models.begin(), models.end(), [&](const ModelResult& m) { return m.verdict == v; });
    };
    if (any(LinVerdict::violation)) return LinVerdict::violation;
    if (any(LinVerdict::inconclusive)) return LinVerdict::inconclusive;
    return any(LinVerdict::ok) ? LinVerdict::ok : LinVerdict::skipped;
}

std::size_t LinearizabilityReport::count(LinVerdict v) const {
    return static_cast<std::size_t>(
        std::count_if(resources.begin(), resources.end(), [&](const ResourceResult& r) { return r.verdict() == v; }));
}

std::vector<std::string> LinearizabilityReport::violations() const {
    std::vector<std::string> out;
    for (const auto& r : resources)
        for (const auto& m : r.models)
            if (m.verdict == LinVerdict::violation) out.push_back(r.resource + ": " + m.model + ": " + m.detail);
    return out;
}

std::vector<std::string> LinearizabilityReport::notes() const {
    std::vector<std::string> out;
    for (const auto& r : resources)
        for (const auto& m : r.models)
            if (m.verdict == LinVerdict::inconclusive || m.verdict == LinVerdict::skipped)
                out.push_back(r.resource + ": " + m.model + " " + std::string(to_string(m.verdict)) + ": " + m.detail);
    return out;
}

LinearizabilityReport LinearizabilityReport::only(const std::string& resource) const {
    LinearizabilityReport out;
    for (const auto& r : resources)
        if (r.resource == resource) out.resources.push_back(r);
    return out;
}

std::string LinearizabilityReport::headline() const {
    std::map<std::string, std::size_t> ran;
    for (const auto& r : resources)
        for (const auto& m : r.models)
            if (m.verdict != LinVerdict::skipped) ++ran[m.model];
    std::string models;
    for (const auto& [name, n] : ran) models += (models.empty() ? "" : ", ") + name + " " + std::to_string(n);
    std::string s = "linearizable: " + std::to_string(count(LinVerdict::ok)) + " resources ok (" +
                    (models.empty() ? std::string("nothing to check") : models) + ")";
    if (const auto v = count(LinVerdict::violation)) s += ", " + std::to_string(v) + " NOT linearizable";
    if (const auto i = count(LinVerdict::inconclusive)) s += ", " + std::to_string(i) + " inconclusive";
    return s;
}

LinearizabilityReport check_linearizability(const History& history, const LinearizabilityOptions& options) {
    std::map<std::string, std::vector<Op>> by_resource;
    for (const auto& op : history.ops) by_resource[op.resource].push_back(op);
    for (const auto& [resource, value] : history.final_values) by_resource.try_emplace(resource);
    LinearizabilityReport report;
    for (const auto& [resource, ops] : by_resource) {
        std::optional<std::string> final_value;
        if (auto it = history.final_values.find(resource); it != history.final_values.end()) final_value = it->second;
        ResourceResult r{.resource = resource, .models = {}};
        auto run = [&](std::string_view name, const std::expected<std::vector<LinOp>, std::string>& mapped,
                       const auto& model) {
            if (!mapped)
                r.models.push_back(
                    {.model = std::string(name), .verdict = LinVerdict::skipped, .detail = mapped.error()});
            else if (!mapped->empty()) r.models.push_back(linearize(model, *mapped, options));
        };
        run(MutexModel::name, mutex_ops(ops), MutexModel{});
        run(FencedRegisterModel::name, register_ops(ops, final_value), FencedRegisterModel{});
        run(SetModel::name, set_ops(ops, final_value), SetModel{});
        report.resources.push_back(std::move(r));
    }
    return report;
}

}  // namespace fencelock::faults
