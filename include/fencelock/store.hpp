#pragma once
/// FencedStore: fencing enforced where the data lives (PostgreSQL or SQLite).
///
/// A lease from LockClient carries a FencingToken; a write protected by it must be checked by
/// the storage that receives it, atomically with the write itself. Every resource row in
/// `fencelock_resources` stores its value and the last fence it accepted; a write, claim or
/// guarded transaction with a fence that is not newer is refused as *stale*. Schema, algorithms
/// and "claim vs transact" guidance: docs/STORE.md.
///
/// Every text a call sends (resource name, value, idempotency key, outcome, outbox stream and
/// payload, Transaction::exec statement and parameters) must be store text: valid UTF-8 without
/// NUL (fencelock/store_text.hpp). Otherwise the call returns store_errc::invalid_input before
/// sending anything, identically on both backends.

#include <cstdint>
#include <expected>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fencelock/store_error.hpp"
#include "fencelock/store_options.hpp"
#include "fencelock/store_text.hpp"
#include "fencelock/types.hpp"

namespace fencelock {

namespace detail {
class Session;
struct TransactAttempt;
}  // namespace detail

template <typename T>
using StoreResult = std::expected<T, StoreError>;

/// Version of the tables `init()` creates; recorded in `fencelock_schema`.
inline constexpr int store_schema_version = 1;

/// What the first completion of an idempotency key recorded.
struct Completion {
    std::string key;
    /// Resource the completion applied to.
    std::string resource;
    /// Fence it was applied with.
    FencingToken fence{0};
    /// write(): the value written. transact(): what the mutation passed to set_outcome().
    std::string outcome;
};

enum class WriteStatus {
    /// The value and last_fence were updated.
    applied,
    /// The resource exists and its last_fence is not older than the fence (or, in same-owner
    /// mode, equal but recorded by another owner). Nothing changed.
    stale,
    /// No such resource. Nothing changed.
    not_found,
    /// The idempotency key was already completed. Nothing changed.
    duplicate,
};

/// Options of write(). Defaults: strict fencing, no idempotency key.
struct WriteOptions {
    /// Records this owner with the fence and opts into the same-owner rule: accept
    /// `fence == last_fence` when the owner stored with it is this one, so one lease holder
    /// can write several times. Without it the write is strict (`fence > last_fence`) and
    /// the stored owner is cleared. Default none.
    std::optional<OwnerToken> owner{};
    /// Completion key (1..256 bytes). When already recorded, nothing is applied and the result
    /// is `duplicate` with the first completion. Recorded in the same transaction as the
    /// write. Default none.
    std::optional<std::string> idempotency_key{};
};

struct WriteResult {
    WriteStatus status = WriteStatus::not_found;
    /// applied: the fence just stored. stale and duplicate: the resource's current last_fence.
    /// not_found: 0.
    FencingToken last_fence{0};
    /// duplicate only: what the first completion of the key stored.
    std::optional<Completion> first{};
};

/// A resource row.
struct Record {
    std::string resource;
    std::string value;
    FencingToken last_fence{0};
    /// Owner recorded with last_fence by a same-owner write or a claim; empty after strict writes.
    std::optional<std::string> last_owner{};
};

enum class CreateStatus { created, exists };

enum class ClaimStatus { claimed, stale, not_found };

struct ClaimResult {
    ClaimStatus status = ClaimStatus::not_found;
    /// The value at the moment of the claim (claimed and stale).
    std::string value;
    /// claimed: the claimer's fence. stale: the current last_fence. not_found: 0.
    FencingToken last_fence{0};
};

/// Rows returned by Transaction::exec, every column as text (nullopt for SQL NULL).
struct Rows {
    std::vector<std::vector<std::optional<std::string>>> rows;
    /// Rows inserted, updated or deleted by the statement.
    std::int64_t affected = 0;
};

/// The handle a transact() mutation receives. Everything done through it belongs to the same
/// database transaction as the fence check and the fence update: it commits with them or not
/// at all. Valid only during the mutation call; not thread-safe.
class Transaction {
public:
    /// Runs one SQL statement. Placeholders are `$1`, `$2`, ... on BOTH backends (SQLite reads
    /// `$N` as a named parameter; we bind by name). Parameters are text, nullopt is NULL;
    /// PostgreSQL infers their types from the statement, SQLite applies column affinity.
    /// After a failed statement the transaction is poisoned: transact() rolls back and returns
    /// that error even if the mutation ignores it.
    StoreResult<Rows> exec(std::string_view sql, std::span<const std::optional<std::string>> params = {});
    StoreResult<Rows> exec(std::string_view sql, std::initializer_list<std::optional<std::string>> params);

    /// Replaces the guarded resource's value.
    StoreResult<void> set_value(std::string_view value);
    /// Adds an event for `stream` to the transactional outbox and returns its unique id (32 hex
    /// characters). The OutboxRelay publishes it only if this transaction commits.
    StoreResult<std::string> publish(std::string_view stream, std::string_view payload);
    /// Text stored with the idempotency key (if any) and returned to later duplicates.
    void set_outcome(std::string outcome) { outcome_ = std::move(outcome); }

    const std::string& resource() const noexcept { return resource_; }
    FencingToken fence() const noexcept { return fence_; }
    /// The resource's value as read under the guard lock, before this transaction.
    const std::string& value() const noexcept { return value_; }
    /// Which database runs the statements (for dialect-specific SQL).
    StoreBackend backend() const noexcept { return backend_; }

private:
    friend struct detail::TransactAttempt;
    Transaction(detail::Session& session, std::string resource, FencingToken fence, std::string value,
                StoreBackend backend)
        : session_(session),
          resource_(std::move(resource)),
          fence_(fence),
          value_(std::move(value)),
          backend_(backend) {}
    StoreResult<Rows> run(std::string_view sql, std::span<const std::optional<std::string>> params);
    /// Poisons the transaction with `e` (transact() will roll back and return it) and returns it.
    std::unexpected<StoreError> refuse(StoreError e);

    detail::Session& session_;
    std::string resource_;
    FencingToken fence_;
    std::string value_;
    StoreBackend backend_;
    std::string outcome_;
    std::optional<StoreError> poisoned_;
};

/// A mutation: return an error to roll everything back. Errors of the store category (from
/// Transaction calls) are reported as errors, `conflict` is retried; any other error code is
/// the mutation's own decision and comes back as TransactStatus::aborted.
using Mutation = std::function<std::expected<void, StoreError>(Transaction&)>;

/// Options of transact(). Same meaning as in WriteOptions.
struct TransactOptions {
    /// Same-owner rule and owner recording, as WriteOptions::owner. Default none (strict).
    std::optional<OwnerToken> owner{};
    /// Completion key, recorded with Transaction::set_outcome's text. Default none.
    std::optional<std::string> idempotency_key{};
};

enum class TransactStatus {
    /// Mutations, fence update (and key, and outbox events) committed together.
    committed,
    stale,
    not_found,
    duplicate,
    /// The mutation returned its own error; everything was rolled back.
    aborted,
};

struct TransactResult {
    TransactStatus status = TransactStatus::not_found;
    /// committed: the fence. stale/duplicate: the current last_fence. Otherwise 0 or unchanged.
    FencingToken last_fence{0};
    /// duplicate only.
    std::optional<Completion> first{};
    /// aborted only: what the mutation returned.
    std::optional<StoreError> cause{};
    /// Attempts made (more than 1 after serialization failures or deadlocks).
    unsigned attempts = 0;
};

/// One event of the transactional outbox.
struct OutboxEvent {
    /// Commit-independent insertion order (not a delivery order guarantee).
    std::int64_t seq = 0;
    /// Unique id for consumers to deduplicate (delivery is at-least-once).
    std::string id;
    std::string resource;
    FencingToken fence{0};
    std::string stream;
    std::string payload;
};

/// Thread-safe handle on one database. Calls from several threads use up to `pool_size`
/// connections (opened lazily, each checked against the schema version on first use).
class FencedStore {
public:
    /// Validates the options; no I/O.
    static std::expected<FencedStore, OptionError> create(StoreOptions options);

    FencedStore(FencedStore&&) noexcept;
    FencedStore& operator=(FencedStore&&) noexcept;
    ~FencedStore();

    /// Creates the tables if missing (idempotent, safe to run concurrently) and records the
    /// schema version; returns it. A database already at another version: invalid_schema.
    /// SQLite: creates the file (not its directory) and switches it to WAL mode.
    StoreResult<int> init();

    /// Inserts a resource row with `value` and last_fence 0; `exists` changes nothing.
    StoreResult<CreateStatus> create_resource(const ResourceName& resource, std::string_view value = {});

    /// Reads a resource row without changing it; nullopt when it does not exist.
    StoreResult<std::optional<Record>> read(const ResourceName& resource);

    /// Conditional write: sets value and last_fence only when `last_fence < fence` (or the
    /// same-owner rule holds), in ONE statement. See WriteStatus for the outcomes.
    StoreResult<WriteResult> write(const ResourceName& resource, FencingToken fence, std::string_view value,
                                   const WriteOptions& options = {});

    /// Fenced read: returns the value and raises last_fence to `fence` (recording `owner`) in
    /// one statement, so every older holder's later write is stale while the claimer's own
    /// write with the same fence and owner is accepted. Accepts `fence > last_fence`, or an
    /// equal fence already claimed by the same owner.
    StoreResult<ClaimResult> claim(const ResourceName& resource, FencingToken fence, const OwnerToken& owner);

    /// Guarded transaction: locks the resource row, rejects a fence that is not newer, runs
    /// `mutation`, raises last_fence, records the key and outbox events, commits. Any failure
    /// rolls everything back. Deadlocks and serialization failures are retried up to
    /// max_attempts; a COMMIT whose reply was lost is store_errc::commit_unknown.
    /// Exceptions thrown by `mutation` roll back and propagate.
    StoreResult<TransactResult> transact(const ResourceName& resource, FencingToken fence,
                                         const TransactOptions& options, const Mutation& mutation);

    /// Up to `limit` unsent outbox events, oldest first (used by OutboxRelay).
    StoreResult<std::vector<OutboxEvent>> pending_events(std::size_t limit);
    /// Marks the events with these seq numbers sent, in one transaction; returns how many.
    StoreResult<std::size_t> mark_sent(std::span<const std::int64_t> seqs);

    StoreBackend backend() const noexcept;
    const StoreOptions& options() const noexcept;

private:
    struct Impl;
    explicit FencedStore(std::unique_ptr<Impl> impl) noexcept;
    std::unique_ptr<Impl> impl_;
};

std::string_view to_string(WriteStatus s) noexcept;
std::string_view to_string(CreateStatus s) noexcept;
std::string_view to_string(ClaimStatus s) noexcept;
std::string_view to_string(TransactStatus s) noexcept;

}  // namespace fencelock
