// The three models of linearizability.hpp and the mapping of a recorded history onto each.
#include <algorithm>
#include <cstdio>
#include <functional>
#include <iterator>
#include <limits>
#include <sstream>

#include "faults/linearizability.hpp"

namespace fencelock::faults {
namespace {
std::string clip(const std::string& s, std::size_t max = 60) { return s.size() <= max ? s : s.substr(0, max) + "..."; }

std::string ms(std::int64_t ns) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f", static_cast<double>(ns) / 1e6);
    return buf;
}

// "B write#3 fence 7 key B ok [1.201, 1.305 ms]", times from the resource's first invoke.
std::string label(const Op& op, std::int64_t t0, std::string_view suffix = {}) {
    std::string s = op.process + " " + std::string(to_string(op.kind)) + "#" + std::to_string(op.id);
    if (!suffix.empty()) s += " (" + std::string(suffix) + ")";
    if (op.fence != 0) s += " fence " + std::to_string(op.fence);
    if (op.kind == OpKind::write && !op.key.empty()) s += " key " + op.key;
    if (op.kind == OpKind::read) s += " saw \"" + clip(op.value) + "\"";
    const bool open = op.outcome == Outcome::invoke;
    return s + " " + std::string(to_string(op.outcome)) + " [" + ms(op.invoke_ns - t0) + ", " +
           (open ? std::string("...") : ms(op.complete_ns - t0)) + " ms]";
}

std::int64_t first_invoke(std::span<const Op> ops) {
    std::int64_t t0 = std::numeric_limits<std::int64_t>::max();
    for (const auto& op : ops) t0 = std::min(t0, op.invoke_ns);
    return ops.empty() ? 0 : t0;
}

// After every op: the moment the target's final value was read.
std::int64_t after_all(std::span<const Op> ops) {
    std::int64_t t = 0;
    for (const auto& op : ops) t = std::max({t, op.invoke_ns, op.complete_ns});
    return t + 1;
}

// A recorded op's timing: ok must take effect within its interval; unknown or invoke may take
// effect after its invoke or never; fail is left out (nullopt).
std::optional<LinOp> timed(const Op& op, std::int64_t t0) {
    if (op.outcome == Outcome::fail) return std::nullopt;
    LinOp l;
    l.call_ns = op.invoke_ns;
    l.return_ns = std::max(op.invoke_ns, op.complete_ns);
    l.optional = op.outcome != Outcome::ok;
    l.label = label(op, t0);
    return l;
}

std::vector<std::string> split_list(const std::string& value) {
    std::vector<std::string> out;
    std::stringstream ss(value);
    for (std::string item; std::getline(ss, item, ',');)
        if (!item.empty()) out.push_back(item);
    std::sort(out.begin(), out.end());
    return out;
}

LinOp final_read(std::span<const Op> ops, std::int64_t t0, const std::string& value) {
    LinOp l;
    l.kind = LinOp::Kind::read;
    l.call_ns = l.return_ns = after_all(ops);
    l.label = "final value \"" + clip(value) + "\" [" + ms(l.call_ns - t0) + " ms]";
    return l;
}

std::string join(const std::vector<std::string>& items, std::size_t max = 5) {
    std::string s;
    for (std::size_t i = 0; i < items.size() && i < max; ++i) s += (i ? ", " : "") + items[i];
    if (items.size() > max) s += " and " + std::to_string(items.size() - max) + " more";
    return s.empty() ? "none" : s;
}

}  // namespace

// ---- models -------------------------------------------------------------------------------

std::optional<MutexModel::State> MutexModel::step(const State& s, const LinOp& op) const {
    if (op.kind == LinOp::Kind::lock && s == 0) return op.owner;
    if (op.kind == LinOp::Kind::unlock && s == op.owner) return 0;
    return std::nullopt;
}

std::string MutexModel::why(const State& s, const LinOp&, std::span<const LinOp> ops) const {
    return s == 0 ? "the mutex is free" : "the mutex is held by " + ops[s - 1].label;
}

std::optional<FencedRegisterModel::State> FencedRegisterModel::step(const State& s, const LinOp& op) const {
    if (op.kind == LinOp::Kind::write) {
        if (op.fence <= s.fence) return std::nullopt;
        return State{op.fence, op.value};
    }
    if (op.kind == LinOp::Kind::read) {
        if (s.value && s.value != op.value) return std::nullopt;
        return State{s.fence, op.value};  // a read of an unrecorded value fixes it
    }
    return std::nullopt;
}

std::size_t FencedRegisterModel::hash(const State& s) const {
    return std::hash<std::uint64_t>()(s.fence) * 31 + (s.value ? std::hash<std::string>()(*s.value) : 7);
}

std::string FencedRegisterModel::why(const State& s, const LinOp& op, std::span<const LinOp>) const {
    if (op.kind == LinOp::Kind::write)
        return "fence " + std::to_string(op.fence) + " is not above the last accepted fence " + std::to_string(s.fence);
    return "the register holds \"" + clip(s.value.value_or("?")) + "\"";
}

std::optional<SetModel::State> SetModel::step(const State& s, const LinOp& op) const {
    if (op.kind == LinOp::Kind::add) {
        auto at = std::lower_bound(s.begin(), s.end(), op.element);
        if (at != s.end() && *at == op.element) return std::nullopt;
        State next = s;
        next.insert(next.begin() + (at - s.begin()), op.element);
        return next;
    }
    if (op.kind == LinOp::Kind::read && op.elements == s) return s;
    return std::nullopt;
}

std::size_t SetModel::hash(const State& s) const {
    std::size_t h = s.size();
    for (const auto& e : s) h = h * 1'000'003 ^ std::hash<std::string>()(e);
    return h;
}

std::string SetModel::why(const State& s, const LinOp& op, std::span<const LinOp>) const {
    if (op.kind == LinOp::Kind::add) return op.element + " is in the set already";
    std::vector<std::string> missing, unexpected;
    std::set_difference(s.begin(), s.end(), op.elements.begin(), op.elements.end(), std::back_inserter(missing));
    std::set_difference(op.elements.begin(), op.elements.end(), s.begin(), s.end(), std::back_inserter(unexpected));
    std::string out = missing.empty() ? "" : "missing " + join(missing);
    if (!unexpected.empty())
        out += (out.empty() ? "" : "; ") + std::string("seen but not in the set ") + join(unexpected);
    return out;
}

// ---- histories to model ops ---------------------------------------------------------------

// The lock may take effect from the hold's acquire op's invoke (the latest ok acquire of the
// same process and fence before the hold; the hold's start when none is recorded) up to the
// hold's start; the unlock at any moment after the hold's end (the release or the expiry).
std::expected<std::vector<LinOp>, std::string> mutex_ops(std::span<const Op> ops) {
    const std::int64_t t0 = first_invoke(ops);
    std::vector<LinOp> out;
    for (const auto& h : ops) {
        if (h.kind != OpKind::hold || h.outcome != Outcome::ok) continue;
        std::int64_t from = h.invoke_ns;
        const Op* grant = nullptr;
        for (const auto& a : ops)
            if (a.kind == OpKind::acquire && a.outcome == Outcome::ok && a.process == h.process && a.fence == h.fence &&
                a.complete_ns <= h.invoke_ns && (!grant || a.invoke_ns > grant->invoke_ns))
                grant = &a;
        if (grant) from = grant->invoke_ns;
        LinOp lock{.kind = LinOp::Kind::lock, .owner = out.size() + 1, .call_ns = from, .return_ns = h.invoke_ns};
        lock.label = label(h, t0, "lock");
        LinOp unlock{.kind = LinOp::Kind::unlock, .owner = lock.owner, .call_ns = h.complete_ns, .optional = true};
        unlock.label = label(h, t0, "unlock");
        out.push_back(std::move(lock));
        out.push_back(std::move(unlock));
    }
    return out;
}

namespace {
// The writes and successful reads of a data history as the model's operations, then the final
// read of the state when it is known. `write(op, l)` fills in a write and may refuse the history
// (its reason); `read(value, l)` fills in what a read (or the final read) returned.
template <typename Write, typename Read>
std::expected<std::vector<LinOp>, std::string> data_ops(std::span<const Op> ops,
                                                        const std::optional<std::string>& final_value, Write write,
                                                        Read read) {
    const std::int64_t t0 = first_invoke(ops);
    std::vector<LinOp> out;
    for (const auto& op : ops) {
        if (op.kind != OpKind::write && (op.kind != OpKind::read || op.outcome != Outcome::ok)) continue;
        auto l = timed(op, t0);
        if (!l) continue;
        if (op.kind == OpKind::write) {
            if (auto refused = write(op, *l)) return std::unexpected(*refused);
        } else {
            read(op.value, *l);
        }
        out.push_back(std::move(*l));
    }
    if (out.empty()) return out;
    if (final_value) {
        out.push_back(final_read(ops, t0, *final_value));
        read(*final_value, out.back());
    }
    return out;
}
}  // namespace

std::expected<std::vector<LinOp>, std::string> register_ops(std::span<const Op> ops,
                                                            const std::optional<std::string>& final_value) {
    return data_ops(
        ops, final_value,
        [](const Op& op, LinOp& l) -> std::optional<std::string> {
            // Unfenced writes (the negative controls without a lock) are not a fenced
            // register's history: its first write would already be "stale".
            if (op.fence == 0) return "writes without a fence (" + l.label + ")";
            l.kind = LinOp::Kind::write;
            l.fence = op.fence;
            // The queue's handler writes inside its transaction and records no value.
            if (!op.value.empty()) l.value = op.value;
            return std::nullopt;
        },
        [](const std::string& value, LinOp& l) { l.value = value; });
}

std::expected<std::vector<LinOp>, std::string> set_ops(std::span<const Op> ops,
                                                       const std::optional<std::string>& final_value) {
    return data_ops(
        ops, final_value,
        [](const Op& op, LinOp& l) -> std::optional<std::string> {
            if (op.key.empty()) return "a write adds no element (" + l.label + ")";
            l.kind = LinOp::Kind::add;
            l.element = op.key;
            return std::nullopt;
        },
        [](const std::string& value, LinOp& l) { l.elements = split_list(value); });
}

}  // namespace fencelock::faults
