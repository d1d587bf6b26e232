#include <cstdio>
#include <string>

#include "fencelock/logging.hpp"
#include "common/log.hpp"

namespace fencelock {
namespace {

std::string_view level_name(LogLevel l) {
    switch (l) {
        case LogLevel::debug: return "debug";
        case LogLevel::info: return "info";
        case LogLevel::warn: return "warn";
        case LogLevel::error: return "error";
        case LogLevel::off: return "off";
    }
    return "info";
}

std::string ms(std::chrono::microseconds d) { return std::to_string(static_cast<double>(d.count()) / 1000.0); }

}  // namespace

std::optional<LogLevel> parse_log_level(std::string_view text) {
    for (auto l : {LogLevel::debug, LogLevel::info, LogLevel::warn, LogLevel::error, LogLevel::off})
        if (text == level_name(l)) return l;
    return std::nullopt;
}

std::string resource_hash(std::string_view resource) {
    std::uint64_t h = 14695981039346656037ull;
    for (unsigned char c : resource) {
        h ^= c;
        h *= 1099511628211ull;
    }
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
    return buf;
}

JsonLogObserver::JsonLogObserver(LogOptions options) : options_(std::move(options)) {}

void JsonLogObserver::log(LogLevel level, std::string_view event, std::string_view resource,
                          std::initializer_list<std::pair<std::string_view, std::string>> fields) noexcept {
    if (level < options_.level || options_.level == LogLevel::off) return;
    try {
        std::string line = "{\"level\":";
        detail::append_json_string(line, level_name(level));
        line += ",\"event\":";
        detail::append_json_string(line, event);
        const auto sep = resource.find(options_.resource_type_separator);
        line += ",\"resource_type\":";
        detail::append_json_string(line, sep == std::string_view::npos || sep == 0 ? "untyped" : resource.substr(0, sep));
        if (options_.raw_resource_ids) {
            line += ",\"resource\":";
            detail::append_json_string(line, resource);
        } else {
            line += ",\"resource_hash\":";
            detail::append_json_string(line, resource_hash(resource));
        }
        for (const auto& [key, value] : fields) {
            if (value.empty()) continue;  // not applicable to this event
            line += ',';
            detail::append_json_string(line, key);
            line += ':';
            detail::append_json_string(line, value);
        }
        line += '}';
        if (options_.sink) {
            options_.sink(line);
        } else {
            line += '\n';
            std::fputs(line.c_str(), stderr);
        }
    } catch (...) {
    }
}

void JsonLogObserver::on_acquire(const AcquireEvent& e) noexcept {
    const bool failed = e.result == AcquireResult::error;
    const LogLevel level = failed ? LogLevel::warn : e.result == AcquireResult::acquired ? LogLevel::info : LogLevel::debug;
    log(level, "lock_acquire", e.resource.str(),
        {{"result", std::string(to_string(e.result))},
         {"owner", e.owner.str()},
         {"fence", e.fence ? std::to_string(e.fence->value()) : ""},
         {"lease_ms", std::to_string(e.lease.count())},
         {"attempts", std::to_string(e.attempts)},
         {"wait_ms", ms(e.waited)},
         {"error", failed ? e.error.message() : ""}});
}

void JsonLogObserver::on_renew(const RenewEvent& e) noexcept {
    const LogLevel level = e.result == RenewStatus::renewed ? LogLevel::debug : LogLevel::warn;
    log(level, "lock_renew", e.resource.str(),
        {{"result", std::string(result_label(e.result))},
         {"owner", e.owner.str()},
         {"fence", e.fence ? std::to_string(e.fence->value()) : ""},
         {"lease_ms", std::to_string(e.lease.count())},
         {"kept", e.kept ? "true" : "false"},
         {"error", e.result ? "" : e.result.error().message()}});
}

void JsonLogObserver::on_release(const ReleaseEvent& e) noexcept {
    const LogLevel level = e.result == ReleaseStatus::released ? LogLevel::info : LogLevel::warn;
    log(level, "lock_release", e.resource.str(),
        {{"result", std::string(result_label(e.result))},
         {"owner", e.owner.str()},
         {"held_ms", e.held_for ? ms(*e.held_for) : ""},
         {"error", e.result ? "" : e.result.error().message()}});
}

void JsonLogObserver::on_lease_lost(const LossEvent& e) noexcept {
    log(LogLevel::warn, "lock_lease_lost", e.resource.str(),
        {{"reason", std::string(to_string(e.reason))},
         {"owner", e.owner.str()},
         {"fence", std::to_string(e.fence.value())},
         {"held_ms", ms(e.held_for)}});
}

}  // namespace fencelock
