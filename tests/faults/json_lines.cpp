#include "faults/json_lines.hpp"

#include <nlohmann/json.hpp>

namespace fencelock::faults {

JsonLine& JsonLine::set(std::string key, std::string value) {
    fields_[std::move(key)] = std::move(value);
    return *this;
}

JsonLine& JsonLine::set(std::string key, std::int64_t value) {
    fields_[std::move(key)] = value;
    return *this;
}

std::string JsonLine::str(const std::string& key) const {
    auto it = fields_.find(key);
    if (it == fields_.end()) return {};
    const auto* s = std::get_if<std::string>(&it->second);
    return s ? *s : std::string{};
}

std::int64_t JsonLine::num(const std::string& key) const {
    auto it = fields_.find(key);
    if (it == fields_.end()) return 0;
    const auto* n = std::get_if<std::int64_t>(&it->second);
    return n ? *n : 0;
}

std::string JsonLine::dump() const {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& [key, value] : fields_) std::visit([&, &k = key](const auto& v) { j[k] = v; }, value);
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::optional<JsonLine> JsonLine::parse(std::string_view line) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return std::nullopt;
    JsonLine out;
    for (const auto& [key, value] : j.items()) {
        if (value.is_string()) out.set(key, value.get<std::string>());
        else if (value.is_number_integer()) out.set(key, value.get<std::int64_t>());
        else return std::nullopt;  // flat records only: strings and integers
    }
    return out;
}

std::string json_quote(std::string_view s) {
    return nlohmann::json(std::string(s)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace fencelock::faults
