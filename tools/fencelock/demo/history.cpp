#include "demo/history.hpp"

#include <nlohmann/json.hpp>

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
    r.leases_lost = history.losses.size();
    for (const auto& f : history.faults) (f.kind == "kill" ? r.kills : r.pauses) += 1;
    return r;
}

std::string to_json_line(const Operation& op) {
    return json{{"type", "op"},          {"worker", op.worker},       {"record", op.record},
                {"fence", op.fence},     {"id", op.id},               {"acquired_ns", op.acquired_ns},
                {"write_ns", op.write_ns}, {"end_ns", op.end_ns},     {"result", op.result}}
        .dump();
}

std::string to_json_line(const LeaseLost& loss) {
    return json{{"type", "lease_lost"}, {"worker", loss.worker}, {"record", loss.record},
                {"fence", loss.fence},  {"at_ns", loss.at_ns},   {"reason", loss.reason}}
        .dump();
}

std::string to_json_line(const Fault& fault) {
    return json{{"type", "fault"}, {"kind", fault.kind}, {"target", fault.target},
                {"start_ns", fault.start_ns}, {"end_ns", fault.end_ns}}
        .dump();
}

bool parse_history_line(const std::string& line, History& history) {
    const json j = json::parse(line, nullptr, false);
    if (!j.is_object() || !j.contains("type")) return false;
    try {
        const std::string type = j.at("type");
        if (type == "op") {
            history.operations.push_back({j.at("worker"), j.at("record"), j.at("fence"), j.at("id"),
                                          j.at("acquired_ns"), j.at("write_ns"), j.at("end_ns"), j.at("result")});
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
