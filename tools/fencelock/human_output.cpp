#include "human_output.hpp"

#include <fmt/format.h>
#include <unistd.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <ctime>

namespace fencelock::cli {

using nlohmann::json;

void add_format_flags(CLI::App& command, FormatFlags& flags) {
    auto* as_json =
        command.add_flag("--json", flags.json, "JSON lines, whatever stdout is (default when not a terminal)");
    command.add_flag("--table", flags.table, "a table for people, whatever stdout is (default on a terminal)")
        ->excludes(as_json);
}

Format chosen_format(const FormatFlags& flags, bool stdout_is_terminal) {
    if (flags.json) return Format::json;
    if (flags.table) return Format::table;
    return stdout_is_terminal ? Format::table : Format::json;
}

Format chosen_format(const FormatFlags& flags) { return chosen_format(flags, ::isatty(STDOUT_FILENO) == 1); }

namespace {

std::string cell_text(const json& value) {
    if (value.is_null()) return "-";
    if (value.is_string()) return value.get<std::string>();
    return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

// Characters, not bytes: a resource name may be UTF-8. Continuation bytes do not count.
std::size_t width(const std::string& text) {
    return static_cast<std::size_t>(
        std::count_if(text.begin(), text.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

}  // namespace

Column field_column(std::string heading, std::string key) {
    return {std::move(heading), [key = std::move(key)](const json& record) {
                return record.contains(key) ? cell_text(record.at(key)) : std::string("-");
            }};
}

Column duration_column(std::string heading, std::string key) {
    return {std::move(heading), [key = std::move(key)](const json& record) {
                if (!record.contains(key) || !record.at(key).is_number()) return std::string("-");
                return human_duration(record.at(key).get<std::int64_t>());
            }};
}

void print_table(std::ostream& out, const std::vector<Column>& columns, const std::vector<json>& records) {
    std::vector<std::vector<std::string>> rows;
    rows.reserve(records.size() + 1);
    std::vector<std::string> headings;
    for (const Column& c : columns) headings.push_back(c.heading);
    rows.push_back(std::move(headings));
    for (const json& record : records) {
        std::vector<std::string> row;
        for (const Column& c : columns) row.push_back(c.cell(record));
        rows.push_back(std::move(row));
    }
    std::vector<std::size_t> widths(columns.size(), 0);
    for (const auto& row : rows)
        for (std::size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], width(row[i]));
    for (const auto& row : rows) {
        std::string line;
        for (std::size_t i = 0; i < row.size(); ++i) {
            line += row[i];
            if (i + 1 < row.size()) line += std::string(widths[i] - width(row[i]) + 2, ' ');
        }
        out << line << "\n";
    }
}

void print_fields(std::ostream& out, const std::vector<std::pair<std::string, std::string>>& fields) {
    std::size_t name_width = 0;
    for (const auto& [name, value] : fields) name_width = std::max(name_width, width(name));
    for (const auto& [name, value] : fields)
        out << name << std::string(name_width - width(name) + 2, ' ') << value << "\n";
}

std::string human_duration(std::int64_t ms) {
    if (ms < 0) return "-" + human_duration(ms == INT64_MIN ? INT64_MAX : -ms);
    constexpr std::int64_t second = 1000, minute = 60 * second, hour = 60 * minute, day = 24 * hour;
    if (ms < second) return fmt::format("{}ms", ms);
    if (ms < minute) return fmt::format("{}.{}s", ms / second, ms % second / 100);  // tenths, cut not rounded
    if (ms < hour) return fmt::format("{}m{:02}s", ms / minute, ms % minute / second);
    if (ms < day) return fmt::format("{}h{:02}m", ms / hour, ms % hour / minute);
    return fmt::format("{}d{:02}h", ms / day, ms % day / hour);
}

std::string human_time(std::int64_t unix_ms) {
    const std::time_t seconds = static_cast<std::time_t>(unix_ms / 1000);
    std::tm utc{};
    gmtime_r(&seconds, &utc);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%SZ", &utc);
    return text;
}

}  // namespace fencelock::cli
