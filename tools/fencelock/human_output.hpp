#pragma once
// Output for people and for scripts, one convention for every command that shows records
// (inspect, list, audit, queue stats, queue list): a table, or a list of fields for a single
// record, when stdout is a terminal; JSON (one object per line, README "JSON output") when it
// is not, which is what a script, a pipe or a file sees. --json and --table force either.
// The JSON is the stable interface; the table's layout may change between releases.
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace CLI {
class App;
}

namespace fencelock::cli {

enum class Format { json, table };

/// --json and --table as given on one command.
struct FormatFlags {
    bool json = false;
    bool table = false;
};

/// Adds --json and --table (mutually exclusive) to `command`.
void add_format_flags(CLI::App& command, FormatFlags& flags);

/// The format `flags` ask for; neither given: a table when stdout is a terminal, else JSON.
Format chosen_format(const FormatFlags& flags, bool stdout_is_terminal);
Format chosen_format(const FormatFlags& flags);

/// One column of a table: its heading and how a record's cell reads.
struct Column {
    std::string heading;
    std::function<std::string(const nlohmann::json&)> cell;
};

/// `key` as it is: strings bare, numbers and booleans as JSON writes them, absent or null "-".
Column field_column(std::string heading, std::string key);
/// `key`, a number of milliseconds, as human_duration() writes it.
Column duration_column(std::string heading, std::string key);

/// Rows of records under their headings, columns two spaces apart and as wide as their widest
/// cell (counted in characters, not bytes); the last column is not padded.
void print_table(std::ostream& out, const std::vector<Column>& columns, const std::vector<nlohmann::json>& records);

/// One record as "name  value" lines, the names aligned.
void print_fields(std::ostream& out, const std::vector<std::pair<std::string, std::string>>& fields);

/// Milliseconds for people: "850ms", "12.3s", "4m05s", "2h07m", "3d04h"; negative with a "-".
std::string human_duration(std::int64_t ms);

/// Unix milliseconds as UTC, "2026-12-07 12:01:02Z".
std::string human_time(std::int64_t unix_ms);

}  // namespace fencelock::cli
