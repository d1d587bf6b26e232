#include "common/log.hpp"

#include <cstdio>

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

void log_event(std::string_view level, std::string_view event, std::initializer_list<LogField> fields) noexcept {
    try {
        std::string line = "{\"level\":";
        append_json_string(line, level);
        line += ",\"event\":";
        append_json_string(line, event);
        for (const auto& [key, value] : fields) {
            line += ',';
            append_json_string(line, key);
            line += ':';
            append_json_string(line, value);
        }
        line += "}\n";
        std::fputs(line.c_str(), stderr);
    } catch (...) {
        std::fputs("{\"level\":\"error\",\"event\":\"log_failed\"}\n", stderr);
    }
}

}  // namespace fencelock::detail
