#pragma once
// The write target the scenarios protect.
//
// `Target` is the seam: a scenario only reads a resource's value, writes one with a fence and
// an idempotency key, and at the end asks for the log of accepted writes. Two implementations:
// FileRegister, a tiny fenced register in a directory (the reference the checker was built
// against), and StoreTarget (store_target.hpp), the real FencedStore on SQLite or PostgreSQL.
// Worker processes open the same target from a spec string (open_target).
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "faults/fault_history.hpp"

namespace fencelock::faults {

enum class TargetStatus {
    /// The value, the last fence and the accepted-writes log were updated.
    applied,
    /// Fencing is on and the fence was not newer than the last accepted one. Nothing changed.
    stale,
    /// The idempotency key already took effect. Nothing changed.
    duplicate,
};

std::string_view to_string(TargetStatus s) noexcept;

struct TargetWrite {
    TargetStatus status = TargetStatus::stale;
    /// The resource's last accepted fence after the call.
    std::uint64_t last_fence = 0;
};

/// What a fenced store offers a scenario. Implementations must be safe to use from several
/// threads, and from several processes when scenarios spawn workers.
class Target {
public:
    virtual ~Target() = default;
    /// Whether stale fences are refused (false: the negative control, everything accepted).
    virtual bool fencing() const = 0;
    /// The current value ("" for a resource never written).
    virtual std::string read(const std::string& resource) = 0;
    /// Last accepted fence of a resource (0 for none).
    virtual std::uint64_t last_fence(const std::string& resource) = 0;
    /// Replaces the value if the fence is newer than the last accepted one (or fencing is
    /// off) and `idempotency_key` (if not empty) has not taken effect yet. One atomic step.
    virtual TargetWrite write(const std::string& resource, const std::string& value, std::uint64_t fence,
                              const std::string& idempotency_key) = 0;
    /// Every accepted write, in acceptance order.
    virtual std::vector<AcceptedWrite> accepted() = 0;
};

/// A fenced register per resource in a directory, shared by processes. Every call takes an
/// exclusive flock(2) on `dir/lock`, so check-and-write is atomic across threads and processes
/// (each call opens its own file description, which flock locks independently).
class FileRegister final : public Target {
public:
    /// Creates an empty target in `dir` (created if missing) and records the fencing mode
    /// there, so every process that opens it agrees on it.
    static std::unique_ptr<FileRegister> create(const std::filesystem::path& dir, bool fencing);
    /// Opens a target created by create(); throws std::runtime_error when there is none.
    static std::unique_ptr<FileRegister> open(const std::filesystem::path& dir);

    bool fencing() const override { return fencing_; }
    std::string read(const std::string& resource) override;
    std::uint64_t last_fence(const std::string& resource) override;
    TargetWrite write(const std::string& resource, const std::string& value, std::uint64_t fence,
                      const std::string& idempotency_key) override;
    std::vector<AcceptedWrite> accepted() override;

private:
    FileRegister(std::filesystem::path dir, bool fencing) : dir_(std::move(dir)), fencing_(fencing) {}
    std::filesystem::path dir_;
    bool fencing_;
};

/// Where a scenario's target lives.
enum class Backend { file, sqlite, postgres };

std::string_view to_string(Backend b) noexcept;

/// A target as one string a child process can open: "on LOCATION" or "off LOCATION" (fencing
/// on or off), LOCATION being a FileRegister directory or a database URL.
std::string target_spec(bool fencing, const std::string& location);
/// Opens the target a spec names (created beforehand by the test). Throws std::runtime_error
/// on a bad spec or a target that is not there.
std::unique_ptr<Target> open_target(const std::string& spec);

/// Everything a check needs from a target: its accepted log and the final value of every
/// resource it holds or any op touched.
History collect(Target& target, std::vector<Op> ops);

}  // namespace fencelock::faults
