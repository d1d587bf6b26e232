#pragma once
// Flat JSON objects, one per line: the format every history file and accepted-writes log of
// the fault suite uses, so a child process, a thread and the target can all append records a
// test merges later. Values are strings or signed 64-bit integers; nothing nests.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace fencelock::faults {

/// One record: field name -> string or integer.
class JsonLine {
public:
    using Value = std::variant<std::string, std::int64_t>;

    JsonLine& set(std::string key, std::string value);
    JsonLine& set(std::string key, std::int64_t value);

    /// The field as a string ("" when absent or an integer).
    std::string str(const std::string& key) const;
    /// The field as an integer (0 when absent or a string).
    std::int64_t num(const std::string& key) const;
    bool has(const std::string& key) const { return fields_.contains(key); }

    /// `{"k":"v","n":1}` without a trailing newline; keys in sorted order.
    std::string dump() const;
    /// Parses one line; nullopt when it is not a flat object (a torn last line of a killed
    /// process, for instance).
    static std::optional<JsonLine> parse(std::string_view line);

private:
    std::map<std::string, Value> fields_;
};

/// JSON string escaping (quotes, backslash, control characters).
std::string json_quote(std::string_view s);

}  // namespace fencelock::faults
