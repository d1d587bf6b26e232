#pragma once
/// Failures of the fenced stores (PostgreSQL, SQLite) as std::error_code values of the
/// `fencelock.store` category, and what a caller should do about each.
///
/// Expected outcomes (applied, stale, not_found, duplicate, aborted...) are NOT errors: they
/// come back as values. An error here means the database did not give an answer we can act on.

#include <string>
#include <string_view>
#include <system_error>

#include "fencelock/error.hpp"

namespace fencelock {

enum class store_errc {
    /// Could not connect to PostgreSQL or open the SQLite file. Nothing was sent.
    unavailable = 1,
    /// The connection broke inside an explicit transaction, before COMMIT was sent. The
    /// server rolls such a transaction back: nothing happened.
    connection_lost,
    /// The connection broke while COMMIT (or a single self-committing write) was in flight.
    /// The change may or may not be durable. Resolve with an idempotency key or a read.
    commit_unknown,
    /// statement_timeout / lock_timeout (PostgreSQL) or the busy timeout (SQLite) expired.
    /// The statement and its transaction were rolled back.
    timeout,
    /// A serialization failure or deadlock (PostgreSQL 40001 / 40P01) or a stale SQLite
    /// snapshot. Seen by mutations inside transact(), which retries it for them.
    conflict,
    /// transact() or write() met `conflict` on every one of its attempts. Nothing applied.
    serialization_exhausted,
    /// The fencelock tables are missing or have another schema version: run `store init`.
    invalid_schema,
    /// A statement was rejected (syntax, constraint, type), typically the caller's own SQL
    /// inside transact(). The transaction was rolled back.
    statement_failed,
    /// Anything else the database reported (disk full, I/O error, corruption...).
    database_error,
    /// A resource name, idempotency key, value, outcome, outbox stream or payload, or a
    /// Transaction::exec parameter is not store text (valid UTF-8 without NUL, see
    /// fencelock/store_text.hpp). Refused before any statement was sent: nothing changed.
    invalid_input,
    /// A transact() mutation ended or broke the guarded transaction (it ran COMMIT or
    /// ROLLBACK, or changed or deleted the guard row), so the fence could not be raised under
    /// the guard's lock. transact() did not commit and rolled back what was still open; what
    /// the mutation itself committed before that (its own COMMIT) is not guarded. Fix the
    /// mutation.
    transaction_broken,
};

/// An error code plus the database's own words (SQLSTATE and message), for logs.
struct StoreError {
    std::error_code code;
    std::string detail;
};

const std::error_category& store_error_category() noexcept;

inline std::error_code make_error_code(store_errc e) noexcept { return {static_cast<int>(e), store_error_category()}; }

/// What to do after a store error: retryable (nothing happened), outcome_unknown (it may have
/// happened) or fatal (fix configuration or data first). Codes of the lock's `fencelock`
/// category (the outbox relay talks to Redis) are classified by fencelock::classify.
failure_kind classify_store_error(std::error_code ec) noexcept;

/// Stable snake_case name of a store error ("unavailable", "commit_unknown"...), or the
/// message of a code from another category.
std::string to_name(std::error_code ec);

}  // namespace fencelock

template <>
struct std::is_error_code_enum<fencelock::store_errc> : std::true_type {};
