#pragma once
// Every statement the store runs, in one place. Placeholders are $N on both backends; the SQL
// below is valid PostgreSQL 15 and SQLite >= 3.35 (ON CONFLICT, RETURNING) unless its name says
// otherwise. The schema (version 1) is documented in docs/STORE.md.
#include <string_view>

namespace fencelock::detail::sql {

inline constexpr std::string_view schema_postgres = R"sql(
BEGIN;
-- Concurrent `store init` runs would race on the catalogs; one at a time.
SELECT pg_advisory_xact_lock(7461636865);
CREATE TABLE IF NOT EXISTS fencelock_schema (
    id           integer PRIMARY KEY CHECK (id = 1),
    version      integer NOT NULL,
    installed_at timestamptz NOT NULL DEFAULT CURRENT_TIMESTAMP);
CREATE TABLE IF NOT EXISTS fencelock_resources (
    resource   text PRIMARY KEY,
    value      text NOT NULL DEFAULT '',
    last_fence bigint NOT NULL DEFAULT 0 CHECK (last_fence >= 0),
    last_owner text,
    updated_at timestamptz NOT NULL DEFAULT CURRENT_TIMESTAMP);
CREATE TABLE IF NOT EXISTS fencelock_idempotency (
    key          text PRIMARY KEY,
    resource     text NOT NULL,
    fence        bigint NOT NULL,
    outcome      text NOT NULL DEFAULT '',
    completed_at timestamptz NOT NULL DEFAULT CURRENT_TIMESTAMP);
CREATE TABLE IF NOT EXISTS fencelock_outbox (
    seq        bigserial PRIMARY KEY,
    event_id   text NOT NULL UNIQUE,
    resource   text NOT NULL,
    fence      bigint NOT NULL,
    stream     text NOT NULL,
    payload    text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT CURRENT_TIMESTAMP,
    sent_at    timestamptz);
CREATE INDEX IF NOT EXISTS fencelock_outbox_unsent ON fencelock_outbox (seq) WHERE sent_at IS NULL;
INSERT INTO fencelock_schema (id, version) VALUES (1, 1) ON CONFLICT (id) DO NOTHING;
COMMIT;
)sql";

inline constexpr std::string_view schema_sqlite = R"sql(
BEGIN IMMEDIATE;
CREATE TABLE IF NOT EXISTS fencelock_schema (
    id           INTEGER PRIMARY KEY CHECK (id = 1),
    version      INTEGER NOT NULL,
    installed_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP);
CREATE TABLE IF NOT EXISTS fencelock_resources (
    resource   TEXT PRIMARY KEY,
    value      TEXT NOT NULL DEFAULT '',
    last_fence INTEGER NOT NULL DEFAULT 0 CHECK (last_fence >= 0),
    last_owner TEXT,
    updated_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP);
CREATE TABLE IF NOT EXISTS fencelock_idempotency (
    key          TEXT PRIMARY KEY,
    resource     TEXT NOT NULL,
    fence        INTEGER NOT NULL,
    outcome      TEXT NOT NULL DEFAULT '',
    completed_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP);
CREATE TABLE IF NOT EXISTS fencelock_outbox (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    event_id   TEXT NOT NULL UNIQUE,
    resource   TEXT NOT NULL,
    fence      INTEGER NOT NULL,
    stream     TEXT NOT NULL,
    payload    TEXT NOT NULL,
    created_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP,
    sent_at    TEXT);
CREATE INDEX IF NOT EXISTS fencelock_outbox_unsent ON fencelock_outbox (seq) WHERE sent_at IS NULL;
INSERT INTO fencelock_schema (id, version) VALUES (1, 1) ON CONFLICT (id) DO NOTHING;
COMMIT;
)sql";

// Resources. $1 resource, $2 fence, $3 value, $4 owner.
inline constexpr std::string_view create_resource =
    "INSERT INTO fencelock_resources (resource, value, last_fence) VALUES ($1, $2, 0) "
    "ON CONFLICT (resource) DO NOTHING";
inline constexpr std::string_view read_resource =
    "SELECT value, last_fence, last_owner FROM fencelock_resources WHERE resource = $1";
inline constexpr std::string_view read_fence = "SELECT last_fence FROM fencelock_resources WHERE resource = $1";
/// The conditional write, strict: only a newer fence. Clears the owner.
inline constexpr std::string_view write_strict =
    "UPDATE fencelock_resources SET value = $3, last_fence = $2, last_owner = NULL, "
    "updated_at = CURRENT_TIMESTAMP WHERE resource = $1 AND last_fence < $2";
/// The conditional write with the same-owner rule: a newer fence, or the same fence
/// recorded by the same owner.
inline constexpr std::string_view write_same_owner =
    "UPDATE fencelock_resources SET value = $3, last_fence = $2, last_owner = $4, "
    "updated_at = CURRENT_TIMESTAMP WHERE resource = $1 "
    "AND (last_fence < $2 OR (last_fence = $2 AND last_owner = $4))";
/// enforce_fencing = false only: the same write without any check (the lost-update baseline).
inline constexpr std::string_view write_unfenced =
    "UPDATE fencelock_resources SET value = $3, last_fence = $2, last_owner = $4, "
    "updated_at = CURRENT_TIMESTAMP WHERE resource = $1";
/// enforce_fencing = false only: a claim without any check.
inline constexpr std::string_view claim_unfenced =
    "UPDATE fencelock_resources SET last_fence = $2, last_owner = $3, updated_at = CURRENT_TIMESTAMP "
    "WHERE resource = $1 RETURNING value";
/// Fenced read: raise last_fence to the claimer's and return the value in one statement.
/// $1 resource, $2 fence, $3 owner.
inline constexpr std::string_view claim =
    "UPDATE fencelock_resources SET last_fence = $2, last_owner = $3, updated_at = CURRENT_TIMESTAMP "
    "WHERE resource = $1 AND (last_fence < $2 OR (last_fence = $2 AND last_owner = $3)) RETURNING value";

// Guarded transactions (see "Why the guarded transaction is safe" in guarded_transaction.cpp).
inline constexpr std::string_view begin_sqlite = "BEGIN IMMEDIATE";
inline constexpr std::string_view commit = "COMMIT";
/// The guard, the first statement after BEGIN: locks the row, checks the fence and raises
/// last_fence in one UPDATE, returning the value. The row lock is held to COMMIT, and a
/// rollback undoes the raise. No row: stale or not found, told apart by read_fence.
/// $1 resource, $2 fence.
inline constexpr std::string_view guard_strict =
    "UPDATE fencelock_resources SET last_fence = $2, last_owner = NULL, updated_at = CURRENT_TIMESTAMP "
    "WHERE resource = $1 AND last_fence < $2 RETURNING value";
/// The guard with the same-owner rule ($3 owner): the claim's own statement.
inline constexpr std::string_view guard_same_owner = claim;
/// enforce_fencing = false only: the raise without any check ($3 owner or NULL).
inline constexpr std::string_view guard_unfenced = claim_unfenced;
/// Sent with the COMMIT, after the mutation: the guard row must still carry our fence. If the
/// mutation deleted the row or changed its last_fence, this tries to insert a row with
/// last_fence = -1, which CHECK (last_fence >= 0) or the primary key refuses: an error, so the
/// COMMIT behind it does not run. An intact row inserts nothing. $1 resource, $2 fence.
inline constexpr std::string_view guard_intact =
    "INSERT INTO fencelock_resources (resource, last_fence) SELECT $1, -1 "
    "WHERE NOT EXISTS (SELECT 1 FROM fencelock_resources WHERE resource = $1 AND last_fence = $2)";
inline constexpr std::string_view set_value =
    "UPDATE fencelock_resources SET value = $2, updated_at = CURRENT_TIMESTAMP WHERE resource = $1";

// Idempotency keys. $1 key, $2 resource, $3 fence, $4 outcome.
inline constexpr std::string_view key_insert =
    "INSERT INTO fencelock_idempotency (key, resource, fence, outcome) VALUES ($1, $2, $3, $4) "
    "ON CONFLICT (key) DO NOTHING";
inline constexpr std::string_view key_lookup =
    "SELECT resource, fence, outcome FROM fencelock_idempotency WHERE key = $1";
inline constexpr std::string_view key_outcome = "UPDATE fencelock_idempotency SET outcome = $2 WHERE key = $1";

// Outbox.
inline constexpr std::string_view publish =
    "INSERT INTO fencelock_outbox (event_id, resource, fence, stream, payload) VALUES ($1, $2, $3, $4, $5)";
inline constexpr std::string_view pending =
    "SELECT seq, event_id, resource, fence, stream, payload FROM fencelock_outbox "
    "WHERE sent_at IS NULL ORDER BY seq LIMIT $1";
inline constexpr std::string_view mark_sent =
    "UPDATE fencelock_outbox SET sent_at = CURRENT_TIMESTAMP WHERE seq = $1 AND sent_at IS NULL";

}  // namespace fencelock::detail::sql
