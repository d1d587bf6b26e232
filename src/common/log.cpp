#include "common/log.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <ctime>

namespace fencelock::detail {
void append_json_string(std::string& out, std::string_view s) {
    out += '"';
    for (unsigned char c : s) {
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            default:
                if (c < 0x20) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\u%04x", c);
                    out += buf;
                } else {
                    out += static_cast<char>(c);
                }
        }
    }
    out += '"';
}

std::string rfc3339_utc(std::chrono::system_clock::time_point t) {
    using namespace std::chrono;
    const auto ms = floor<milliseconds>(t.time_since_epoch());
    const std::time_t secs = static_cast<std::time_t>(floor<seconds>(ms).count());
    std::tm tm{};
    ::gmtime_r(&secs, &tm);
    char buf[64];  // room for any int the compiler cannot rule out
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                  tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms.count() % 1000));
    return buf;
}

std::string log_line_head(std::string_view level, std::string_view event) {
    std::string line = "{\"ts\":";
    append_json_string(line, rfc3339_utc(std::chrono::system_clock::now()));
    line += ",\"level\":";
    append_json_string(line, level);
    line += ",\"event\":";
    append_json_string(line, event);
    return line;
}

namespace {
template <typename Number>
void append_number(std::string& out, Number n) {
    char buf[32];
    const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, n);
    out.append(buf, ec == std::errc() ? end : buf);
}
}  // namespace

void append_json_field(std::string& out, std::string_view key, const LogValue& value) {
    if (value.absent()) return;
    out += ',';
    append_json_string(out, key);
    out += ':';
    std::visit(
        [&out](const auto& v) {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, std::string>) append_json_string(out, v);
            else if constexpr (std::is_same_v<T, bool>) out += v ? "true" : "false";
            else if constexpr (std::is_same_v<T, double>) {
                if (std::isfinite(v)) append_number(out, v);
                else out += "null";  // JSON has no NaN or infinity
            } else if constexpr (std::is_integral_v<T>) append_number(out, v);
        },
        value.value());
}

void log_event(std::string_view level, std::string_view event, std::initializer_list<LogField> fields) noexcept {
    try {
        std::string line = log_line_head(level, event);
        for (const auto& [key, value] : fields) append_json_field(line, key, value);
        line += "}\n";
        std::fputs(line.c_str(), stderr);
    } catch (...) {
        std::fputs("{\"level\":\"error\",\"event\":\"log_failed\"}\n", stderr);
    }
}

}  // namespace fencelock::detail
