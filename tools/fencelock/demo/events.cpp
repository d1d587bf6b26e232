#include "demo/events.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <sstream>

namespace fencelock::demo {

using nlohmann::json;

std::vector<std::string> appended_ids(const std::string& value) {
    std::vector<std::string> ids;
    std::istringstream in(value);
    for (std::string id; in >> id;) ids.push_back(id);
    return ids;
}

Report make_report(const History& history, const std::map<std::string, std::string>& final_values) {
    Report r;
    std::map<std::string, std::map<std::string, int>> present;  // record -> id -> occurrences
    for (const auto& [record, value] : final_values)
        for (const auto& id : appended_ids(value)) ++present[record][id];
    for (const auto& op : history.operations) {
        if (op.result == "contended") {
            ++r.contended;
            continue;
        }
        if (op.result == "aborted") ++r.aborted;
        if (op.write_ns != 0) ++r.attempted;
        if (op.result == "stale") ++r.stale_rejected;
        if (op.result != "applied") continue;
        ++r.accepted;
        if (present[op.record][op.id] == 0) r.lost_ids.insert(op.id);
    }
    for (const auto& [record, ids] : present)
        for (const auto& [id, count] : ids)
            if (count > 1) r.duplicates += static_cast<std::uint64_t>(count - 1);
    r.lost_updates = r.lost_ids.size();
    r.overwrites = find_overwrites(history, r.lost_ids);
    r.leases_lost = history.losses.size();
    for (const auto& f : history.faults) (f.kind == "kill" ? r.kills : r.pauses) += 1;
    return r;
}

namespace {

// The applied writes of one record by id, and whether one write's value contains another.
class Lineage {
public:
    Lineage(const History& history, const std::string& record) {
        for (const auto& op : history.operations)
            if (op.record == record && op.result == "applied") writes_.emplace(op.id, &op);
    }

    const std::map<std::string, const Operation*>& writes() const { return writes_; }

    /// Whether `ancestor` is on the based_on chain of `id` (each write's value is its chain).
    bool builds_on(const std::string& id, const std::string& ancestor) const {
        // The chain cannot be longer than the writes; the bound keeps a malformed history finite.
        std::string at = id;
        for (std::size_t steps = 0; steps <= writes_.size(); ++steps) {
            const auto it = writes_.find(at);
            if (it == writes_.end()) return false;
            at = it->second->based_on;
            if (at == ancestor) return true;
        }
        return false;
    }

private:
    std::map<std::string, const Operation*> writes_;
};

}  // namespace

std::vector<Overwrite> find_overwrites(const History& history, const std::set<std::string>& lost_ids) {
    std::map<std::string, Lineage> lineages;  // record -> its writes
    std::vector<Overwrite> found;
    for (const auto& lost_id : lost_ids) {
        const auto lost = std::find_if(history.operations.begin(), history.operations.end(),
                                       [&](const Operation& op) { return op.id == lost_id && op.result == "applied"; });
        if (lost == history.operations.end()) continue;
        const Lineage& lineage = lineages.try_emplace(lost->record, history, lost->record).first->second;
        const Operation* overwriter = nullptr;
        for (const auto& [id, write] : lineage.writes()) {
            if (id == lost_id || write->end_ns <= lost->write_ns) continue;
            if (lineage.builds_on(id, lost_id) || lineage.builds_on(lost_id, id)) continue;
            if (!overwriter || write->end_ns < overwriter->end_ns) overwriter = write;
        }
        if (!overwriter) continue;
        // Leases of one record do not overlap: the one acquired first had lapsed before the
        // other began, so its write came after it had been superseded.
        const bool lost_is_stale = lost->acquired_ns < overwriter->acquired_ns;
        found.push_back({lost_id, overwriter->id, lost_is_stale ? lost_id : overwriter->id});
    }
    return found;
}

std::string to_json_line(const Operation& op) {
    return json{
        {"type", "op"},        {"worker", op.worker},           {"record", op.record},     {"fence", op.fence},
        {"id", op.id},         {"acquired_ns", op.acquired_ns}, {"write_ns", op.write_ns}, {"end_ns", op.end_ns},
        {"result", op.result}, {"based_on", op.based_on}}
        .dump();
}

std::string to_json_line(const LeaseLost& loss) {
    return json{{"type", "lease_lost"}, {"worker", loss.worker}, {"record", loss.record},
                {"fence", loss.fence},  {"at_ns", loss.at_ns},   {"reason", loss.reason}}
        .dump();
}

std::string to_json_line(const Fault& fault) {
    return json{{"type", "fault"},
                {"kind", fault.kind},
                {"target", fault.target},
                {"start_ns", fault.start_ns},
                {"end_ns", fault.end_ns}}
        .dump();
}

bool parse_history_line(const std::string& line, History& history) {
    const json j = json::parse(line, nullptr, false);
    if (!j.is_object() || !j.contains("type")) return false;
    try {
        const std::string type = j.at("type");
        if (type == "op") {
            history.operations.push_back({j.at("worker"), j.at("record"), j.at("fence"), j.at("id"),
                                          j.at("acquired_ns"), j.at("write_ns"), j.at("end_ns"), j.at("result"),
                                          j.value("based_on", std::string())});
        } else if (type == "lease_lost") {
            history.losses.push_back({j.at("worker"), j.at("record"), j.at("fence"), j.at("at_ns"), j.at("reason")});
        } else if (type == "fault") {
            history.faults.push_back({j.at("kind"), j.at("target"), j.at("start_ns"), j.at("end_ns")});
        } else {
            return false;
        }
    } catch (const json::exception&) {
        return false;
    }
    return true;
}

}  // namespace fencelock::demo
