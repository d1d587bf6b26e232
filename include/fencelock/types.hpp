#pragma once
/// Strong value types of the lock protocol: a resource name, an owner token and a fencing token.
/// None of them converts implicitly from a raw string or integer, so they cannot be mixed up.

#include <chrono>
#include <compare>
#include <cstdint>
#include <expected>
#include <string>
#include <string_view>

namespace fencelock {

/// A moment on the local monotonic clock: lease deadlines (safe-until) are counted on it.
using steady_time = std::chrono::steady_clock::time_point;

/// Why a string was refused as a ResourceName or OwnerToken.
struct InvalidName {
    std::string message;
};

/// Name of the thing being locked (an order id, an invoice, an account).
/// Arbitrary bytes (spaces, braces, UTF-8, NUL) of length 1..max_size.
/// A name may not start with '}': Redis Cluster would see an empty hash tag `{}` in
/// `lock:{R}` and hash the whole key, splitting the lock and its counter across slots.
class ResourceName {
public:
    static constexpr std::size_t max_size = 1024;

    /// Validates and wraps `name`; never throws.
    static std::expected<ResourceName, InvalidName> make(std::string_view name);

    const std::string& str() const noexcept { return name_; }
    friend bool operator==(const ResourceName&, const ResourceName&) = default;

private:
    explicit ResourceName(std::string name) : name_(std::move(name)) {}
    std::string name_;
};

/// Proves to Redis who holds a lease. Generated fresh for every acquisition from the OS
/// CSPRNG (128 bits, 32 hex characters); never a worker id, so a restarted worker can never
/// pass for the previous holder. Opaque: compare it, print it, nothing else.
class OwnerToken {
public:
    static constexpr std::size_t max_size = 128;

    /// A new random token (getrandom(2)); throws std::system_error only if the kernel refuses.
    static OwnerToken generate();
    /// Wraps a token received from elsewhere (CLI, environment): 1..max_size printable
    /// ASCII characters without spaces.
    static std::expected<OwnerToken, InvalidName> make(std::string_view token);

    const std::string& str() const noexcept { return token_; }
    friend bool operator==(const OwnerToken&, const OwnerToken&) = default;

private:
    explicit OwnerToken(std::string token) : token_(std::move(token)) {}
    std::string token_;
};

/// Monotonic number issued with every new ownership of a resource: max(last fence + 1, the
/// Redis server's TIME in microseconds), so it keeps growing across a failover that lost the
/// last fences or a restart without persistence (docs/DESIGN.md, "Fences across failover").
/// A larger token is a newer owner. Storage accepts a write only when its token is newer than
/// the last one it accepted. Gaps are normal and large; only the order matters. Not
/// arithmetic. Always at most max_fence, so JSON and every client language carry it exactly.
inline constexpr std::uint64_t max_fence = (std::uint64_t{1} << 53) - 1;

class FencingToken {
public:
    constexpr explicit FencingToken(std::uint64_t value) noexcept : value_(value) {}
    constexpr std::uint64_t value() const noexcept { return value_; }
    friend constexpr auto operator<=>(FencingToken, FencingToken) noexcept = default;

private:
    std::uint64_t value_;
};

}  // namespace fencelock
