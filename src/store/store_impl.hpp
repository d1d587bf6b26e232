#pragma once
// Internals shared by store.cpp, guarded_transaction.cpp and outbox.cpp, defined in store_impl.cpp:
// transaction control (begin, commit, rollback), row reads, argument checks and the retry backoff.
#include <initializer_list>
#include <optional>
#include <string>

#include "fencelock/store.hpp"
#include "store/session.hpp"

namespace fencelock {

struct FencedStore::Impl {
    Impl(DatabaseUrl url, StoreOptions options) : pool(std::move(url), std::move(options)) {}
    detail::SessionPool pool;
};

namespace detail {

/// Opens a write transaction: PostgreSQL at the given isolation, SQLite BEGIN IMMEDIATE
/// (the database write lock taken up front, waiting up to busy_timeout).
StoreResult<void> begin(Session& s, Isolation isolation);
/// The statement begin() runs.
std::string_view begin_statement(StoreBackend backend, Isolation isolation) noexcept;
/// Best-effort ROLLBACK; a broken connection has rolled back already (server side).
void rollback(Session& s) noexcept;
/// COMMIT. A connection that breaks here leaves the outcome unknown: commit_unknown.
StoreResult<void> commit(Session& s);
/// What a failed COMMIT means: connection_lost becomes commit_unknown; otherwise the
/// transaction is rolled back and the error returned as it is.
StoreError failed_commit(Session& s, StoreError e);

/// A fence column or parameter. Fences are stored as signed 64-bit (BIGINT/INTEGER).
std::uint64_t parse_u64(const std::optional<std::string>& text);
inline std::int64_t fence_param(FencingToken f) noexcept { return static_cast<std::int64_t>(f.value()); }

/// The first completion of `key`, if any.
StoreResult<std::optional<Completion>> lookup_key(Session& s, std::string_view key);
/// The current last_fence of a resource (nullopt: no such resource).
StoreResult<std::optional<FencingToken>> current_fence(Session& s, std::string_view resource);

/// Misuse checks (std::invalid_argument): an idempotency key of 1..256 bytes, a fence that
/// fits the signed 64-bit column.
void check_arguments(FencingToken fence, const std::optional<std::string>& key);

/// An argument checked against the store-text rule, named for the message.
struct TextArg {
    std::string_view what;
    std::string_view text;
};
/// invalid_input naming `what` (or the first of `args`) when it is not store text
/// (fencelock/store_text.hpp). Called before anything is sent, on both backends.
StoreResult<void> check_text(std::string_view what, std::string_view text);
StoreResult<void> check_text(std::initializer_list<TextArg> args);

/// Tells the options' observer (if any) that `operation` on `resource` was refused as stale.
void report_rejection(const StoreOptions& options, StoreOperation operation, const std::string& resource,
                      FencingToken fence, FencingToken last_fence) noexcept;

/// Sleeps the full-jitter delay before attempt `attempt` + 1.
void backoff_sleep(const StoreOptions& options, unsigned attempt);

}  // namespace detail
}  // namespace fencelock
