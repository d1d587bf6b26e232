#include <cstdio>
#include <string>

#include "common/log.hpp"
#include "fencelock/error.hpp"
#include "fencelock/logging.hpp"
#include "obs/renewal_log_limit.hpp"

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

double ms(std::chrono::microseconds d) { return static_cast<double>(d.count()) / 1000.0; }

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

JsonLogObserver::JsonLogObserver(LogOptions options)
    : options_(std::move(options)), renewals_(std::make_unique<detail::RenewalLogLimit>()) {}

JsonLogObserver::~JsonLogObserver() = default;

void JsonLogObserver::log(LogLevel level, std::string_view event, std::string_view resource,
                          std::initializer_list<LogField> fields) noexcept {
    if (level < options_.level || options_.level == LogLevel::off) return;
    try {
        std::string line = detail::log_line_head(level_name(level), event);
        const auto sep = resource.find(options_.resource_type_separator);
        detail::append_json_field(line, "resource_type",
                                  sep == std::string_view::npos || sep == 0 ? "untyped" : resource.substr(0, sep));
        if (options_.raw_resource_ids) detail::append_json_field(line, "resource", std::string(resource));
        else detail::append_json_field(line, "resource_hash", resource_hash(resource));
        for (const auto& [key, value] : fields) detail::append_json_field(line, key, value);
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
    const LogLevel level = failed || e.clock_behind              ? LogLevel::warn
                           : e.result == AcquireResult::acquired ? LogLevel::info
                                                                 : LogLevel::debug;
    log(level, "lock_acquire", e.resource.str(),
        {{"result", std::string(to_string(e.result))},
         {"owner", e.owner.str()},
         {"fence", e.fence ? LogValue(e.fence->value()) : LogValue()},
         {"lease_ms", e.lease.count()},
         {"attempts", e.attempts},
         {"contended_attempts", e.contended_attempts},
         {"wait_ms", ms(e.waited)},
         {"clock_behind_ms", e.clock_behind ? LogValue(ms(*e.clock_behind)) : LogValue()},
         {"error", failed ? e.error.message() : ""},
         {"detail", failed ? error_detail(e.error) : ""}});
}

namespace {

// Which lease a renewal is about: the owner token is unique per acquisition.
std::string lease_key(const ResourceName& resource, const OwnerToken& owner) {
    std::string key = owner.str();
    key += '\n';
    key += resource.str();
    return key;
}

// Failures of the same kind are repeats: the same status, or the same error code.
std::string renewal_outcome(const std::expected<RenewStatus, std::error_code>& result) {
    std::string kind(result_label(result));
    if (!result)
        kind += std::string(":") + result.error().category().name() + ":" + std::to_string(result.error().value());
    return kind;
}

}  // namespace

void JsonLogObserver::on_renew(const RenewEvent& e) noexcept {
    detail::RenewalLogLimit::Verdict verdict;
    try {
        verdict = renewals_->note(lease_key(e.resource, e.owner), renewal_outcome(e.result));
    } catch (...) {
    }
    if (!verdict.log) return;
    // A recovery closes a warning: it is logged where the warning was.
    const LogLevel level = e.result == RenewStatus::renewed && !verdict.recovered ? LogLevel::debug : LogLevel::warn;
    log(level, "lock_renew", e.resource.str(),
        {{"result", std::string(result_label(e.result))},
         {"owner", e.owner.str()},
         {"fence", e.fence ? LogValue(e.fence->value()) : LogValue()},
         {"lease_ms", e.lease.count()},
         {"kept", e.kept},
         {"recovered", verdict.recovered ? LogValue(true) : LogValue()},
         {"held_back", verdict.held_back > 0 ? LogValue(verdict.held_back) : LogValue()},
         {"error", e.result ? "" : e.result.error().message()},
         {"detail", e.result ? "" : error_detail(e.result.error())}});
}

void JsonLogObserver::on_release(const ReleaseEvent& e) noexcept {
    try {
        renewals_->forget(lease_key(e.resource, e.owner));
    } catch (...) {
    }
    const LogLevel level = e.result == ReleaseStatus::released ? LogLevel::info : LogLevel::warn;
    log(level, "lock_release", e.resource.str(),
        {{"result", std::string(result_label(e.result))},
         {"owner", e.owner.str()},
         {"held_ms", e.held_for ? LogValue(ms(*e.held_for)) : LogValue()},
         {"error", e.result ? "" : e.result.error().message()},
         {"detail", e.result ? "" : error_detail(e.result.error())}});
}

void JsonLogObserver::on_lease_lost(const LossEvent& e) noexcept {
    try {
        renewals_->forget(lease_key(e.resource, e.owner));
    } catch (...) {
    }
    log(LogLevel::warn, "lock_lease_lost", e.resource.str(),
        {{"reason", std::string(to_string(e.reason))},
         {"owner", e.owner.str()},
         {"fence", e.fence.value()},
         {"held_ms", ms(e.held_for)}});
}

void JsonLogObserver::on_fence_rejected(const FenceRejectedEvent& e) noexcept {
    log(LogLevel::warn, "fence_rejected", e.resource,
        {{"operation", to_string(e.operation)}, {"fence", e.fence.value()}, {"last_fence", e.last_fence.value()}});
}

}  // namespace fencelock
