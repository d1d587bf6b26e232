#pragma once
// The scenarios' Target over the real fenced store (SQLite or PostgreSQL).
//
// A write is one guarded transaction, FencedStore::transact with the writer's fence and its
// element as idempotency key: the store checks the fence (unless StoreOptions::enforce_fencing
// is off, the negative control), sets the value and appends the write to `fault_accepted`. The
// log row commits with the write or not at all, so the accepted-writes log is the store's own
// record, not what a client believes it did; accepted() reads it back over a separate raw SQL
// session.
#include <memory>
#include <string>

#include "faults/target.hpp"
#include "fencelock/store.hpp"

namespace fencelock::faults {

class StoreTarget final : public Target {
public:
    /// Installs the store's schema and the log table in the database at `url`.
    static std::unique_ptr<StoreTarget> create(const std::string& url, bool fencing);
    /// Opens a database create() prepared (from another process, or a second connection).
    static std::unique_ptr<StoreTarget> open(const std::string& url, bool fencing);

    bool fencing() const override { return fencing_; }
    std::string read(const std::string& resource) override;
    std::uint64_t last_fence(const std::string& resource) override;
    TargetWrite write(const std::string& resource, const std::string& value, std::uint64_t fence,
                      const std::string& idempotency_key) override;
    std::vector<AcceptedWrite> accepted() override;

    FencedStore& store() noexcept { return store_; }
    const std::string& url() const noexcept { return url_; }

private:
    StoreTarget(std::string url, bool fencing, FencedStore store)
        : url_(std::move(url)), fencing_(fencing), store_(std::move(store)) {}
    std::string url_;
    bool fencing_;
    FencedStore store_;
};

/// Appends one accepted write to `fault_accepted` inside the caller's transaction. Queue
/// handlers call it too, so every scenario's log comes from the same table.
StoreResult<void> log_accepted(Transaction& tx, const std::string& resource, std::uint64_t fence,
                               const std::string& value, const std::string& key);

/// Read and replace a resource's value inside the caller's transaction, whichever row the
/// transaction guards (the queue storm's negative control writes a row it did not lock).
StoreResult<std::string> read_value(Transaction& tx, const std::string& resource);
StoreResult<void> write_value(Transaction& tx, const std::string& resource, const std::string& value);

}  // namespace fencelock::faults
