// The operator's vocabulary of job states and list cursors (fencelock/queue.hpp). Pure.
#include "fencelock/queue.hpp"

#include <algorithm>
#include <array>

namespace fencelock {
namespace {

constexpr std::array<std::pair<JobState, std::string_view>, 4> state_names{{
    {JobState::ready, "ready"},
    {JobState::running, "running"},
    {JobState::delayed, "delayed"},
    {JobState::dead, "dead"},
}};

bool digits(std::string_view s) noexcept {
    return !s.empty() && s.size() <= 20 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

/// "A<sep>B" with A and B decimal digits.
bool two_numbers(std::string_view s, char sep) noexcept {
    const auto at = s.find(sep);
    return at != std::string_view::npos && digits(s.substr(0, at)) && digits(s.substr(at + 1));
}

}  // namespace

std::string_view to_string(JobState state) noexcept {
    for (const auto& [s, name] : state_names)
        if (s == state) return name;
    return "?";
}

std::optional<JobState> job_state_from_name(std::string_view name) noexcept {
    for (const auto& [s, n] : state_names)
        if (n == name) return s;
    return std::nullopt;
}

bool valid_cursor(JobState state, std::string_view cursor) noexcept {
    if (cursor.empty()) return true;
    // Stream states page by entry id (ms-seq); the delayed set by "due_ms:listed_at_that_due".
    return two_numbers(cursor, state == JobState::delayed ? ':' : '-');
}

}  // namespace fencelock
