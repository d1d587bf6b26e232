#pragma once
/// The value of one field of a structured (JSON) log line: text, a number or a boolean, written
/// with its JSON type (a fence is `"fence":17`, never `"fence":"17"`), or absent.

#include <concepts>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

namespace fencelock {

class LogValue {
public:
    using Variant = std::variant<std::monostate, std::string, std::int64_t, std::uint64_t, double, bool>;

    /// Absent: the field is left out of the line (not applicable to this event).
    LogValue() = default;
    LogValue(std::nullopt_t) {}
    /// Text. An empty text is absent too, so `cond ? text : ""` leaves the field out.
    LogValue(std::string s) {
        if (!s.empty()) v_ = std::move(s);
    }
    LogValue(std::string_view s) : LogValue(std::string(s)) {}
    LogValue(const char* s) : LogValue(std::string(s)) {}
    LogValue(bool b) : v_(b) {}
    LogValue(double d) : v_(d) {}
    template <std::integral T>
    requires(!std::same_as<T, bool> && !std::same_as<T, char>) LogValue(T n) {
        if constexpr (std::is_signed_v<T>) v_ = static_cast<std::int64_t>(n);
        else v_ = static_cast<std::uint64_t>(n);
    }
    template <typename T>
    LogValue(const std::optional<T>& o) {
        if (o) *this = LogValue(*o);
    }

    bool absent() const noexcept { return std::holds_alternative<std::monostate>(v_); }
    const Variant& value() const noexcept { return v_; }

private:
    Variant v_;
};

/// One `"key": value` of a log line.
using LogField = std::pair<std::string_view, LogValue>;

}  // namespace fencelock
