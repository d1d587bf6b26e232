#include "faults/fault_history.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <system_error>

#include "faults/json_lines.hpp"

namespace fencelock::faults {

std::string_view to_string(OpKind k) noexcept {
    switch (k) {
        case OpKind::acquire: return "acquire";
        case OpKind::read: return "read";
        case OpKind::write: return "write";
        case OpKind::release: return "release";
        case OpKind::hold: return "hold";
        case OpKind::job: return "job";
    }
    return "job";
}

std::string_view to_string(Outcome o) noexcept {
    switch (o) {
        case Outcome::invoke: return "invoke";
        case Outcome::ok: return "ok";
        case Outcome::fail: return "fail";
        case Outcome::unknown: return "unknown";
    }
    return "invoke";
}

namespace {

OpKind kind_from(std::string_view s) {
    for (OpKind k : {OpKind::acquire, OpKind::read, OpKind::write, OpKind::release, OpKind::hold, OpKind::job})
        if (to_string(k) == s) return k;
    return OpKind::job;
}

Outcome outcome_from(std::string_view s) {
    for (Outcome o : {Outcome::ok, Outcome::fail, Outcome::unknown})
        if (to_string(o) == s) return o;
    return Outcome::invoke;
}

std::string ms(std::int64_t ns) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f ms", static_cast<double>(ns) / 1e6);
    return buf;
}

std::string describe(const Op& op) {
    std::string s = op.process + " " + std::string(to_string(op.kind)) + "#" + std::to_string(op.id);
    if (op.fence != 0) s += " fence " + std::to_string(op.fence);
    if (!op.key.empty()) s += " key " + op.key;
    return s;
}

}  // namespace

// ---- recording ----------------------------------------------------------------------------

Recorder::Recorder(std::string process, std::filesystem::path file) : process_(std::move(process)) {
    fd_ = ::open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "open " + file.string());
}

Recorder::~Recorder() {
    if (fd_ >= 0) ::close(fd_);
}

void Recorder::append(const std::string& line) {
    const std::string out = line + "\n";
    // O_APPEND and one write(2) per line: lines from several writers never interleave.
    if (::write(fd_, out.data(), out.size()) != static_cast<ssize_t>(out.size()))
        throw std::system_error(errno, std::generic_category(), "history write");
}

std::uint64_t Recorder::invoke(OpKind kind, const std::string& resource, std::uint64_t fence, const std::string& value,
                               const std::string& key) {
    std::lock_guard lock(mutex_);
    const std::uint64_t id = next_id_++;
    JsonLine line;
    line.set("p", process_).set("id", static_cast<std::int64_t>(id)).set("ev", "invoke");
    line.set("op", std::string(to_string(kind))).set("res", resource).set("t", now_ns());
    line.set("fence", static_cast<std::int64_t>(fence)).set("value", value).set("key", key);
    append(line.dump());
    return id;
}

void Recorder::complete(std::uint64_t id, Outcome outcome, std::uint64_t fence, const std::string& value,
                        const std::string& note) {
    std::lock_guard lock(mutex_);
    JsonLine line;
    line.set("p", process_).set("id", static_cast<std::int64_t>(id)).set("ev", std::string(to_string(outcome)));
    line.set("t", now_ns()).set("fence", static_cast<std::int64_t>(fence)).set("value", value).set("note", note);
    append(line.dump());
}

void Recorder::hold(const std::string& resource, std::uint64_t fence, std::int64_t start_ns, std::int64_t end_ns) {
    std::lock_guard lock(mutex_);
    const std::uint64_t id = next_id_++;
    JsonLine line;
    line.set("p", process_).set("id", static_cast<std::int64_t>(id)).set("ev", "hold").set("res", resource);
    line.set("fence", static_cast<std::int64_t>(fence)).set("t", start_ns).set("end", end_ns);
    append(line.dump());
}

// ---- loading ------------------------------------------------------------------------------

std::vector<Op> load_ops_file(const std::filesystem::path& file) {
    std::ifstream in(file);
    std::vector<Op> ops;
    std::map<std::pair<std::string, std::uint64_t>, std::size_t> index;
    std::string text;
    while (std::getline(in, text)) {
        auto line = JsonLine::parse(text);
        if (!line) continue;  // a torn last line of a killed process
        const std::string ev = line->str("ev");
        const auto key = std::make_pair(line->str("p"), static_cast<std::uint64_t>(line->num("id")));
        if (ev == "invoke" || ev == "hold") {
            Op op;
            op.process = key.first;
            op.id = key.second;
            op.kind = ev == "hold" ? OpKind::hold : kind_from(line->str("op"));
            op.resource = line->str("res");
            op.invoke_ns = line->num("t");
            op.fence = static_cast<std::uint64_t>(line->num("fence"));
            op.value = line->str("value");
            op.key = line->str("key");
            if (ev == "hold") {
                op.complete_ns = line->num("end");
                op.outcome = Outcome::ok;
            }
            index[key] = ops.size();
            ops.push_back(std::move(op));
            continue;
        }
        auto it = index.find(key);
        if (it == index.end()) continue;  // a completion without its invoke: ignore
        Op& op = ops[it->second];
        op.outcome = outcome_from(ev);
        op.complete_ns = line->num("t");
        if (line->num("fence") != 0) op.fence = static_cast<std::uint64_t>(line->num("fence"));
        if (!line->str("value").empty()) op.value = line->str("value");
        op.note = line->str("note");
    }
    return ops;
}

std::vector<Op> load_ops(const std::filesystem::path& dir) {
    std::vector<std::filesystem::path> files;
    for (const auto& entry : std::filesystem::directory_iterator(dir))
        if (entry.path().extension() == ".jsonl") files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    std::vector<Op> ops;
    for (const auto& f : files) {
        auto more = load_ops_file(f);
        ops.insert(ops.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
    }
    return ops;
}

// ---- checks -------------------------------------------------------------------------------

// (a) The target's log in its own order: per resource, each accepted fence must be larger than
// every fence accepted before it. Equal counts as stale: one fence is one ownership, and the
// in-test target writes once per ownership.
std::vector<std::string> check_fence_order(std::span<const AcceptedWrite> accepted) {
    std::vector<std::string> out;
    std::map<std::string, const AcceptedWrite*> newest;
    for (const auto& w : accepted) {
        auto& best = newest[w.resource];
        if (best != nullptr && w.fence <= best->fence) {
            out.push_back(w.resource + ": accepted fence " + std::to_string(w.fence) + " (write #" +
                          std::to_string(w.seq) + ", key " + w.key + ") after fence " + std::to_string(best->fence) +
                          " (write #" + std::to_string(best->seq) + ")");
            continue;
        }
        best = &w;
    }
    return out;
}

std::size_t count_stale_accepted(std::span<const AcceptedWrite> accepted) { return check_fence_order(accepted).size(); }

// (b) Holds are intervals each holder recorded itself, ending at its last successful validity
// check, so each lies inside the time its holder was entitled to act. A sweep by start time
// compares each hold with every earlier hold still open.
std::vector<std::string> check_exclusion(std::span<const Op> ops) {
    std::map<std::string, std::vector<const Op*>> by_resource;
    for (const auto& op : ops)
        if (op.kind == OpKind::hold && op.outcome == Outcome::ok) by_resource[op.resource].push_back(&op);
    std::vector<std::string> out;
    for (auto& [resource, holds] : by_resource) {
        std::sort(holds.begin(), holds.end(), [](const Op* a, const Op* b) { return a->invoke_ns < b->invoke_ns; });
        std::vector<const Op*> open;
        for (const Op* h : holds) {
            std::erase_if(open, [&](const Op* o) { return o->complete_ns <= h->invoke_ns; });
            for (const Op* o : open)
                out.push_back(resource + ": " + describe(*h) + " began " + ms(o->complete_ns - h->invoke_ns) +
                              " before " + describe(*o) + " ended; both believed their lease valid");
            open.push_back(h);
        }
    }
    return out;
}

FinalStateModel append_list_model() {
    return [](const std::string& resource, const std::string& final_value, std::span<const Op> writes) {
        std::map<std::string, int> present;
        std::stringstream ss(final_value);
        for (std::string item; std::getline(ss, item, ',');)
            if (!item.empty()) ++present[item];
        struct Fate {
            bool ok = false, maybe = false;
        };
        std::map<std::string, Fate> fates;
        for (const auto& w : writes) {
            auto& f = fates[w.key];
            if (w.outcome == Outcome::ok) f.ok = true;
            if (w.outcome == Outcome::unknown || w.outcome == Outcome::invoke) f.maybe = true;
        }
        std::vector<std::string> out;
        for (const auto& [key, fate] : fates) {
            const int n = present.contains(key) ? present[key] : 0;
            if (fate.ok && n == 0) out.push_back(resource + ": acknowledged write " + key + " is lost");
            if (n > 1) out.push_back(resource + ": write " + key + " appears " + std::to_string(n) + " times");
            if (!fate.ok && !fate.maybe && n > 0)
                out.push_back(resource + ": write " + key + " was reported failed but took effect");
        }
        for (const auto& [item, n] : present)
            if (!fates.contains(item)) out.push_back(resource + ": element " + item + " was never written");
        return out;
    };
}

// (c) Resources are those written to or present in the target; a resource never written
// must be empty.
std::vector<std::string> check_final_state(std::span<const Op> ops, const std::map<std::string, std::string>& finals,
                                           const FinalStateModel& model) {
    std::map<std::string, std::vector<Op>> writes;
    for (const auto& op : ops)
        if (op.kind == OpKind::write) writes[op.resource].push_back(op);
    for (const auto& [resource, value] : finals) writes.try_emplace(resource);
    std::vector<std::string> out;
    for (const auto& [resource, list] : writes) {
        auto it = finals.find(resource);
        auto found = model(resource, it == finals.end() ? std::string() : it->second, list);
        out.insert(out.end(), found.begin(), found.end());
    }
    return out;
}

// (d) An idempotency key names one business effect; the target may accept it once.
std::vector<std::string> check_idempotency(std::span<const AcceptedWrite> accepted) {
    std::map<std::string, std::vector<std::uint64_t>> seqs;
    for (const auto& w : accepted)
        if (!w.key.empty()) seqs[w.key].push_back(w.seq);
    std::vector<std::string> out;
    for (const auto& [key, list] : seqs) {
        if (list.size() < 2) continue;
        std::string s = "key " + key + " took effect " + std::to_string(list.size()) + " times (writes";
        for (auto q : list) s += " #" + std::to_string(q);
        out.push_back(s + ")");
    }
    return out;
}

// (e) Holds are intervals, not requests, and are exempt.
std::vector<std::string> check_completion(std::span<const Op> ops, std::chrono::milliseconds bound) {
    std::vector<std::string> out;
    const auto bound_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(bound).count();
    for (const auto& op : ops) {
        if (op.kind == OpKind::hold) continue;
        if (op.outcome == Outcome::invoke) {
            out.push_back(describe(op) + " never completed");
            continue;
        }
        if (op.complete_ns - op.invoke_ns > bound_ns)
            out.push_back(describe(op) + " took " + ms(op.complete_ns - op.invoke_ns) + " (bound " +
                          std::to_string(bound.count()) + " ms), ended " + std::string(to_string(op.outcome)));
    }
    return out;
}

// (f) A fence names one ownership. Every ok acquire is one grant, except a retry that Redis
// answered with the lease its owner already had ("reacquired": same process, same fence).
std::vector<std::string> check_unique_fences(std::span<const Op> ops) {
    std::map<std::pair<std::string, std::uint64_t>, const Op*> first;
    std::vector<std::string> out;
    for (const auto& op : ops) {
        if (op.kind != OpKind::acquire || op.outcome != Outcome::ok || op.fence == 0) continue;
        auto [it, fresh] = first.try_emplace({op.resource, op.fence}, &op);
        if (fresh) continue;
        if (op.process == it->second->process && op.note == "reacquired") continue;
        out.push_back(op.resource + ": fence " + std::to_string(op.fence) + " issued to " + describe(*it->second) +
                      " and to " + describe(op));
    }
    return out;
}

namespace {

// The acquire op that granted `process` the lease with `fence` on `resource` (the first one).
const Op* grant_of(std::span<const Op> ops, const std::string& process, const std::string& resource,
                   std::uint64_t fence) {
    for (const auto& op : ops)
        if (op.kind == OpKind::acquire && op.outcome == Outcome::ok && op.process == process &&
            op.resource == resource && op.fence == fence)
            return &op;
    return nullptr;
}

// Real-time order of grants: `a` was granted before `b` was even asked for. Overlapping
// acquisitions are concurrent and in no order.
bool granted_before(const Op& a, const Op& b) { return a.complete_ns < b.invoke_ns; }

}  // namespace

// (g) Fences exist so that the store's order of writes follows the order of leases. A newer
// lease's write accepted first, then an older lease's write accepted after it, means the
// older holder's fence was not below the newer one's: it was issued again, or went back in
// time. fence_order cannot see this, since the store's fences did increase.
std::vector<std::string> check_lease_order(std::span<const Op> ops, std::span<const AcceptedWrite> accepted) {
    struct Traced {
        const AcceptedWrite* write;
        const Op* grant;
    };
    std::vector<Traced> traced;
    for (const auto& w : accepted) {
        auto op = std::find_if(ops.begin(), ops.end(), [&](const Op& o) {
            return o.kind == OpKind::write && o.resource == w.resource && o.key == w.key && o.fence == w.fence;
        });
        if (op == ops.end()) continue;
        if (const Op* grant = grant_of(ops, op->process, w.resource, w.fence)) traced.push_back({&w, grant});
    }
    std::vector<std::string> out;
    for (std::size_t i = 0; i < traced.size(); ++i) {
        for (std::size_t j = 0; j < i; ++j) {
            const auto& older = traced[i];
            const auto& newer = traced[j];
            if (older.write->resource != newer.write->resource || !granted_before(*older.grant, *newer.grant)) continue;
            out.push_back(older.write->resource + ": write #" + std::to_string(older.write->seq) + " of " +
                          describe(*older.grant) + " accepted after write #" + std::to_string(newer.write->seq) +
                          " of " + describe(*newer.grant) + ", granted " +
                          ms(newer.grant->invoke_ns - older.grant->complete_ns) + " later");
            break;
        }
    }
    return out;
}

std::vector<Op> without_holds_begun_in(std::span<const Op> ops, std::int64_t from_ns, std::int64_t until_ns) {
    std::vector<Op> out;
    for (const auto& op : ops)
        if (op.kind != OpKind::hold || op.invoke_ns < from_ns || op.invoke_ns >= until_ns) out.push_back(op);
    return out;
}

History only(const History& history, const std::string& resource) {
    History out;
    for (const auto& op : history.ops)
        if (op.resource == resource) out.ops.push_back(op);
    for (const auto& w : history.accepted)
        if (w.resource == resource) out.accepted.push_back(w);
    if (auto it = history.final_values.find(resource); it != history.final_values.end()) out.final_values.insert(*it);
    return out;
}

std::vector<std::string> Report::all() const {
    std::vector<std::string> out;
    auto add = [&](std::string_view name, const std::vector<std::string>& list) {
        for (const auto& v : list) out.push_back(std::string(name) + ": " + v);
    };
    add("fence_order", fence_order);
    add("exclusion", exclusion);
    add("final_state", final_state);
    add("idempotency", idempotency);
    add("completion", completion);
    add("unique_fence", unique_fence);
    add("lease_order", lease_order);
    return out;
}

Report check(const History& history, const CheckOptions& options) {
    Report r;
    r.fence_order = check_fence_order(history.accepted);
    r.stale_accepted = r.fence_order.size();
    std::vector<Op> replicated = history.ops;
    for (const auto& [from, until] : options.not_replicated)
        replicated = without_holds_begun_in(replicated, from, until);
    r.exclusion = check_exclusion(replicated);
    r.final_state = check_final_state(history.ops, history.final_values, options.model);
    r.idempotency = check_idempotency(history.accepted);
    r.completion = check_completion(history.ops, options.completion_bound);
    if (options.leases) {
        r.unique_fence = check_unique_fences(history.ops);
        r.lease_order = check_lease_order(history.ops, history.accepted);
        r.stale_accepted += r.lease_order.size();
    }
    return r;
}

}  // namespace fencelock::faults
