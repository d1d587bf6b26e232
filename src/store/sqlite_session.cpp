// SQLite through its C API. One sqlite3 connection per session (SQLITE_OPEN_NOMUTEX: the pool
// hands a session to one thread at a time), prepared statements cached per connection.
#include <sqlite3.h>

#include <charconv>
#include <string>
#include <unordered_map>

#include "store/session.hpp"
#include "store/sql_scan.hpp"

namespace fencelock::detail {
namespace {

store_errc map_code(int rc) {
    switch (rc) {
        case SQLITE_BUSY_SNAPSHOT: return store_errc::conflict;  // stale read snapshot: retry
        case SQLITE_CANTOPEN: return store_errc::unavailable;
        default: break;
    }
    switch (rc & 0xff) {
        case SQLITE_BUSY:
        case SQLITE_LOCKED:
        case SQLITE_INTERRUPT: return store_errc::timeout;
        case SQLITE_ERROR:  // syntax errors, "no such table", RAISE() in triggers
        case SQLITE_CONSTRAINT:
        case SQLITE_MISMATCH:
        case SQLITE_RANGE:
        case SQLITE_TOOBIG: return store_errc::statement_failed;
        case SQLITE_CANTOPEN: return store_errc::unavailable;
        default: return store_errc::database_error;
    }
}

class SqliteSession final : public Session {
public:
    explicit SqliteSession(sqlite3* db) : db_(db) {}
    ~SqliteSession() override {
        for (auto& [sql, stmt] : statements_) sqlite3_finalize(stmt);
        sqlite3_close_v2(db_);
    }

    StoreResult<Rows> exec(std::string_view sql, std::span<const Param> params) override {
        sqlite3_stmt* stmt = nullptr;
        bool cached = false;
        if (auto it = statements_.find(std::string(sql)); it != statements_.end()) {
            stmt = it->second;
            cached = true;
        } else {
            const unsigned flags = statements_.size() < max_statements ? SQLITE_PREPARE_PERSISTENT : 0;
            const char* tail = nullptr;
            int rc = sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()), flags, &stmt, &tail);
            if (rc != SQLITE_OK) return std::unexpected(failure(rc));
            if (stmt == nullptr) return std::unexpected(store_error(store_errc::statement_failed, "empty statement"));
            // SQLite would run only the first statement and ignore the rest; PostgreSQL refuses
            // several statements in one prepared call. Refuse them here too, before anything ran.
            const std::string_view rest(tail, static_cast<std::size_t>(sql.data() + sql.size() - tail));
            if (!skip_blank_and_comments(rest).empty()) {
                sqlite3_finalize(stmt);
                return std::unexpected(
                    store_error(store_errc::statement_failed, "one statement per call: text follows the first"));
            }
            if (flags != 0) {
                statements_.emplace(std::string(sql), stmt);
                cached = true;
            }
        }
        auto result = run(stmt, params);
        sqlite3_reset(stmt);
        sqlite3_clear_bindings(stmt);
        if (!cached) sqlite3_finalize(stmt);
        return result;
    }

    StoreResult<void> exec_script(std::string_view sql) override {
        std::string owned(sql);
        char* err = nullptr;
        int rc = sqlite3_exec(db_, owned.c_str(), nullptr, nullptr, &err);
        if (rc == SQLITE_OK) return {};
        std::string message = err != nullptr ? err : sqlite3_errstr(rc);
        sqlite3_free(err);
        return std::unexpected(store_error(map_code(sqlite3_extended_errcode(db_)), message));
    }

    TxState transaction_state() const noexcept override {
        return sqlite3_get_autocommit(db_) != 0 ? TxState::idle : TxState::open;
    }
    StoreBackend backend() const noexcept override { return StoreBackend::sqlite; }

private:
    /// Binds `$N` placeholders by name (so `$2 ... $1` works as on PostgreSQL), steps the
    /// statement to completion and collects its rows as text.
    StoreResult<Rows> run(sqlite3_stmt* stmt, std::span<const Param> params) {
        const int count = sqlite3_bind_parameter_count(stmt);
        for (int i = 1; i <= count; ++i) {
            const char* name = sqlite3_bind_parameter_name(stmt, i);
            std::size_t n = 0;
            std::string_view nm = name != nullptr ? name : "";
            auto [end, ec] = nm.size() > 1 && nm[0] == '$' ? std::from_chars(nm.data() + 1, nm.data() + nm.size(), n)
                                                           : std::from_chars(nm.data(), nm.data(), n);
            if (ec != std::errc() || end != nm.data() + nm.size() || n == 0)
                return std::unexpected(store_error(store_errc::statement_failed,
                                                   "placeholders must be $1, $2, ...; got '" + std::string(nm) + "'"));
            if (n > params.size())
                return std::unexpected(
                    store_error(store_errc::statement_failed, "no value for placeholder " + std::string(nm)));
            const Param& p = params[n - 1];
            int rc = SQLITE_OK;
            if (auto* v = std::get_if<std::int64_t>(&p)) rc = sqlite3_bind_int64(stmt, i, *v);
            else if (auto* s = std::get_if<std::string_view>(&p))
                // A default string_view has a null data(), which SQLite would bind as NULL.
                rc = sqlite3_bind_text(stmt, i, s->data() != nullptr ? s->data() : "", static_cast<int>(s->size()),
                                       SQLITE_STATIC);
            else rc = sqlite3_bind_null(stmt, i);
            if (rc != SQLITE_OK) return std::unexpected(failure(rc));
        }
        Rows out;
        for (;;) {
            int rc = sqlite3_step(stmt);
            if (rc == SQLITE_DONE) break;
            if (rc != SQLITE_ROW) return std::unexpected(failure(rc));
            auto& row = out.rows.emplace_back();
            const int ncols = sqlite3_column_count(stmt);
            for (int c = 0; c < ncols; ++c) {
                if (sqlite3_column_type(stmt, c) == SQLITE_NULL) {
                    row.emplace_back();
                    continue;
                }
                const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt, c));
                row.emplace_back(std::string(text, static_cast<std::size_t>(sqlite3_column_bytes(stmt, c))));
            }
        }
        out.affected = sqlite3_stmt_readonly(stmt) ? 0 : sqlite3_changes64(db_);
        return out;
    }

    StoreError failure(int rc) const {
        const int extended = sqlite3_extended_errcode(db_);
        return store_error(map_code(extended != SQLITE_OK ? extended : rc), sqlite3_errmsg(db_));
    }

    static constexpr std::size_t max_statements = 128;
    sqlite3* db_;
    std::unordered_map<std::string, sqlite3_stmt*> statements_;
};

}  // namespace

StoreResult<std::unique_ptr<Session>> open_sqlite(const DatabaseUrl& url, const StoreOptions& options, bool for_init) {
    sqlite3* db = nullptr;
    const int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | (for_init ? SQLITE_OPEN_CREATE : 0);
    int rc = sqlite3_open_v2(url.target.c_str(), &db, flags, nullptr);
    if (rc != SQLITE_OK) {
        std::string message = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
        sqlite3_close_v2(db);
        return std::unexpected(store_error(
            store_errc::unavailable, url.target + ": " + message + (for_init ? "" : " (run `store init` first?)")));
    }
    sqlite3_extended_result_codes(db, 1);
    const auto ms = std::min<long long>(options.statement_timeout.count(), 1'000'000'000);
    sqlite3_busy_timeout(db, static_cast<int>(ms));
    auto session = std::make_unique<SqliteSession>(db);
    if (!for_init) {
        if (auto r = check_schema(*session); !r) return std::unexpected(r.error());
    }
    return std::unique_ptr<Session>(std::move(session));
}

}  // namespace fencelock::detail
