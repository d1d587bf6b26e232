#pragma once
// The seam between the store algorithms and a database driver. The algorithms (store.cpp,
// guarded_transaction.cpp, outbox.cpp) are written once against Session; postgres_session.cpp and
// sqlite_session.cpp translate to libpq / SQLite and map driver errors to store_errc.
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "fencelock/store.hpp"

namespace fencelock::detail {

/// A bound parameter: NULL, an integer or text (viewed, not copied: valid during exec()).
using Param = std::variant<std::monostate, std::int64_t, std::string_view>;

/// One statement of a batch, its parameters viewed (valid during exec_batch()).
struct Statement {
    std::string_view sql;
    std::span<const Param> params;
};

/// What a batch did: the rows of each statement that succeeded, in order. `error`, when set, is
/// the failure of statement `rows.size()`; the statements after it did not run.
struct BatchResult {
    std::vector<Rows> rows;
    std::optional<StoreError> error;
};

class Session {
public:
    virtual ~Session() = default;
    /// Runs one statement with `$1..$N` placeholders and returns its rows as text.
    /// Errors are mapped to store_errc; connection_lost means the connection is gone (and
    /// healthy() is false from then on).
    virtual StoreResult<Rows> exec(std::string_view sql, std::span<const Param> params) = 0;
    /// Runs `batch` in order, stopping at the first failure. PostgreSQL sends it in one round
    /// trip (libpq pipeline mode); this default runs one statement after the other, which costs
    /// nothing more in process (SQLite). Either way a statement never runs after a failed one.
    virtual BatchResult exec_batch(std::span<const Statement> batch) {
        BatchResult out;
        for (const Statement& st : batch) {
            auto r = exec(st.sql, st.params);
            if (!r) {
                out.error = std::move(r.error());
                break;
            }
            out.rows.push_back(std::move(*r));
        }
        return out;
    }
    /// Runs several statements without parameters (DDL).
    virtual StoreResult<void> exec_script(std::string_view sql) = 0;
    /// Where the session stands. PostgreSQL: PQtransactionStatus (a broken connection is
    /// `broken`); SQLite: sqlite3_get_autocommit (SQLite has no failed-transaction state).
    enum class TxState {
        idle,    ///< connected, no transaction open
        open,    ///< inside a transaction that can still commit
        failed,  ///< inside a transaction a failed statement aborted (PostgreSQL only)
        broken,  ///< connection lost or busy: unusable
    };
    virtual TxState transaction_state() const noexcept = 0;
    /// False once the connection is broken or was left inside a transaction: the pool drops it.
    bool healthy() const noexcept { return transaction_state() == TxState::idle; }
    virtual StoreBackend backend() const noexcept = 0;

    StoreResult<Rows> exec(std::string_view sql, std::initializer_list<Param> params) {
        return exec(sql, std::span<const Param>(params.begin(), params.size()));
    }
};

/// Opens a session. `for_init`: SQLite may create the file; the schema is not checked.
/// Otherwise the schema version is verified (invalid_schema when it does not match).
StoreResult<std::unique_ptr<Session>> open_postgres(const DatabaseUrl& url, const StoreOptions& options, bool for_init);
StoreResult<std::unique_ptr<Session>> open_sqlite(const DatabaseUrl& url, const StoreOptions& options, bool for_init);
StoreResult<std::unique_ptr<Session>> open_session(const DatabaseUrl& url, const StoreOptions& options, bool for_init);

/// Verifies fencelock_schema holds store_schema_version.
StoreResult<void> check_schema(Session& session);

/// Idle sessions for concurrent callers. borrow() hands out a Loan: one caller's exclusive use of
/// a session, returned to the pool on destruction unless the session became unhealthy or the pool
/// already holds pool_size idle sessions. (A loan, not a lease: "lease" is the Redis lock's.)
class SessionPool {
public:
    SessionPool(DatabaseUrl url, StoreOptions options) : url_(std::move(url)), options_(std::move(options)) {}

    class Loan {
    public:
        Loan(SessionPool& pool, std::unique_ptr<Session> s) : pool_(&pool), session_(std::move(s)) {}
        Loan(Loan&&) noexcept = default;
        Loan& operator=(Loan&&) = delete;
        ~Loan();
        Session& operator*() const noexcept { return *session_; }
        Session* operator->() const noexcept { return session_.get(); }

    private:
        SessionPool* pool_;
        std::unique_ptr<Session> session_;
    };

    /// An idle session, or a new one when none is idle.
    StoreResult<Loan> borrow();
    const DatabaseUrl& url() const noexcept { return url_; }
    const StoreOptions& options() const noexcept { return options_; }

private:
    DatabaseUrl url_;
    StoreOptions options_;
    std::mutex mutex_;
    std::vector<std::unique_ptr<Session>> idle_;
};

/// Error helpers.
inline StoreError store_error(store_errc code, std::string detail) {
    return {make_error_code(code), std::move(detail)};
}
inline bool is(const StoreError& e, store_errc code) noexcept { return e.code == make_error_code(code); }

/// 32 lowercase hex characters from getrandom(2).
std::string random_id();

}  // namespace fencelock::detail
