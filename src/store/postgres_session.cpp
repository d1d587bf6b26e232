// PostgreSQL through libpq. Statements are prepared once per connection (named statements,
// parameter types inferred by the server) and run with text parameters.
#include <libpq-fe.h>

#include <cstring>
#include <string>
#include <unordered_map>

#include "common/url_text.hpp"
#include "store/session.hpp"

namespace fencelock::detail {
namespace {

struct ResultDeleter {
    void operator()(PGresult* r) const noexcept { PQclear(r); }
};
using ResultPtr = std::unique_ptr<PGresult, ResultDeleter>;

/// SQLSTATE -> what the caller must do. Connection loss is detected from the connection
/// status first: a reply that never came has no SQLSTATE.
store_errc map_sqlstate(std::string_view state) {
    if (state == "40001" || state == "40P01") return store_errc::conflict;
    if (state == "57014" || state == "55P03") return store_errc::timeout;
    if (state == "57P01" || state == "57P02" || state == "57P03") return store_errc::connection_lost;
    const std::string_view cls = state.substr(0, 2);
    if (cls == "08") return store_errc::connection_lost;
    for (std::string_view c : {"21", "22", "23", "25", "27", "2B", "42", "44", "0A", "P0"})
        if (cls == c) return store_errc::statement_failed;
    return store_errc::database_error;
}

std::string trim(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
}

/// Parameters as libpq wants them: C strings, NULL for SQL NULL, alive as long as this is.
class TextParams {
public:
    explicit TextParams(std::span<const Param> params) {
        text_.reserve(params.size());
        values_.reserve(params.size());
        for (const Param& p : params) {
            if (std::holds_alternative<std::monostate>(p)) {
                text_.emplace_back();
                values_.push_back(nullptr);
                continue;
            }
            if (auto* i = std::get_if<std::int64_t>(&p)) text_.push_back(std::to_string(*i));
            else text_.emplace_back(std::get<std::string_view>(p));
            // Pointers into text_ stay valid: it was reserved, so push_back never reallocates.
            values_.push_back(text_.back().c_str());
        }
    }
    int count() const noexcept { return static_cast<int>(values_.size()); }
    const char* const* values() const noexcept { return values_.data(); }

private:
    std::vector<std::string> text_;
    std::vector<const char*> values_;
};

class PostgresSession final : public Session {
public:
    PostgresSession(PGconn* conn, std::vector<std::string> secrets) : conn_(conn), secrets_(std::move(secrets)) {}
    ~PostgresSession() override { PQfinish(conn_); }

    StoreResult<Rows> exec(std::string_view sql, std::span<const Param> params) override {
        const TextParams text(params);
        auto name = prepared(sql);
        if (!name) return std::unexpected(name.error());
        ResultPtr res;
        if (*name != nullptr) {
            res.reset(PQexecPrepared(conn_, (*name)->c_str(), text.count(), text.values(), nullptr, nullptr, 0));
        } else {
            if (!connected()) return std::unexpected(failure(nullptr));
            std::string owned(sql);
            res.reset(PQexecParams(conn_, owned.c_str(), text.count(), nullptr, text.values(), nullptr, nullptr, 0));
        }
        return collect(res.get());
    }

    /*
     * The batch in one round trip: pipeline mode queues every statement, one Sync ends the
     * pipeline and flushes it. The server runs the statements in order; after an error it skips
     * the rest up to the Sync (libpq reports them PGRES_PIPELINE_ABORTED), so a COMMIT queued
     * behind a failed statement never runs and the transaction stays open in its failed state.
     * Statements are prepared before the pipeline starts (once per connection, as in exec()).
     */
    BatchResult exec_batch(std::span<const Statement> batch) override {
        BatchResult out;
        std::vector<const std::string*> names;
        for (const Statement& st : batch) {
            auto name = prepared(st.sql);
            if (!name) return lost_before_sending(out, name.error());
            names.push_back(*name);
        }
        if (!connected() || PQenterPipelineMode(conn_) != 1) return lost_before_sending(out, failure(nullptr));
        for (std::size_t i = 0; i < batch.size(); ++i) {
            const TextParams text(batch[i].params);
            const int sent =
                names[i] != nullptr
                    ? PQsendQueryPrepared(conn_, names[i]->c_str(), text.count(), text.values(), nullptr, nullptr, 0)
                    : PQsendQueryParams(conn_, std::string(batch[i].sql).c_str(), text.count(), nullptr, text.values(),
                                        nullptr, nullptr, 0);
            if (sent != 1) return lost_before_sending(out, failure(nullptr));
        }
        if (PQpipelineSync(conn_) != 1) return lost_before_sending(out, failure(nullptr));
        // Results come statement by statement, each closed by a NULL, then the Sync's result.
        std::size_t done = 0;
        for (;;) {
            ResultPtr res(PQgetResult(conn_));
            if (!connected()) {
                if (!out.error) out.error = failure(res.get());
                return out;  // broken: the pool drops the session, pipeline mode and all
            }
            if (!res) {
                if (++done > batch.size()) break;  // nothing more will come (should not happen)
                continue;
            }
            const auto status = PQresultStatus(res.get());
            if (status == PGRES_PIPELINE_SYNC) break;
            if (status == PGRES_PIPELINE_ABORTED || out.error) continue;
            auto rows = collect(res.get());
            if (rows) out.rows.push_back(std::move(*rows));
            else out.error = std::move(rows.error());
        }
        if (PQexitPipelineMode(conn_) != 1 && !out.error) out.error = failure(nullptr);
        return out;
    }

    StoreResult<void> exec_script(std::string_view sql) override {
        std::string owned(sql);
        ResultPtr res(PQexec(conn_, owned.c_str()));
        if (!res || (PQresultStatus(res.get()) != PGRES_COMMAND_OK && PQresultStatus(res.get()) != PGRES_TUPLES_OK))
            return std::unexpected(failure(res.get()));
        return {};
    }

    TxState transaction_state() const noexcept override {
        switch (PQtransactionStatus(conn_)) {
            case PQTRANS_IDLE: return TxState::idle;
            case PQTRANS_INTRANS: return TxState::open;
            case PQTRANS_INERROR: return TxState::failed;
            default: return TxState::broken;  // PQTRANS_UNKNOWN (bad connection), PQTRANS_ACTIVE
        }
    }
    StoreBackend backend() const noexcept override { return StoreBackend::postgresql; }

private:
    bool connected() const noexcept { return PQstatus(conn_) == CONNECTION_OK; }

    /// A batch that failed before anything was sent: leave pipeline mode if it was entered.
    BatchResult& lost_before_sending(BatchResult& out, StoreError e) {
        if (PQpipelineStatus(conn_) != PQ_PIPELINE_OFF) (void)PQexitPipelineMode(conn_);
        out.error = std::move(e);
        return out;
    }

    /// Prepares `sql` once per connection and returns its statement name, or nullptr when the
    /// cache is full (ad-hoc SQL from many different mutations): then it runs unnamed. A
    /// failed prepare is the statement's error (it also aborts an open transaction).
    StoreResult<const std::string*> prepared(std::string_view sql) {
        std::string key(sql);
        if (auto it = statements_.find(key); it != statements_.end()) return &it->second;
        if (statements_.size() >= max_statements) return nullptr;
        if (!connected()) return std::unexpected(failure(nullptr));
        std::string name = "fl" + std::to_string(statements_.size());
        ResultPtr res(PQprepare(conn_, name.c_str(), key.c_str(), 0, nullptr));
        if (!res || PQresultStatus(res.get()) != PGRES_COMMAND_OK) return std::unexpected(failure(res.get()));
        return &statements_.emplace(std::move(key), std::move(name)).first->second;
    }

    StoreResult<Rows> collect(PGresult* res) {
        const auto status = res != nullptr ? PQresultStatus(res) : PGRES_FATAL_ERROR;
        if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) return std::unexpected(failure(res));
        Rows out;
        const int nrows = PQntuples(res), ncols = PQnfields(res);
        out.rows.reserve(static_cast<std::size_t>(nrows));
        for (int r = 0; r < nrows; ++r) {
            auto& row = out.rows.emplace_back();
            row.reserve(static_cast<std::size_t>(ncols));
            for (int c = 0; c < ncols; ++c) {
                if (PQgetisnull(res, r, c)) row.emplace_back();
                else
                    row.emplace_back(
                        std::string(PQgetvalue(res, r, c), static_cast<std::size_t>(PQgetlength(res, r, c))));
            }
        }
        const char* affected = PQcmdTuples(res);
        out.affected = affected != nullptr && *affected != '\0' ? std::stoll(affected) : 0;
        return out;
    }

    StoreError failure(PGresult* res) const {
        if (!connected()) return store_error(store_errc::connection_lost, scrub(trim(PQerrorMessage(conn_)), secrets_));
        const char* state = res != nullptr ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : nullptr;
        std::string message = scrub(trim(res != nullptr ? PQresultErrorMessage(res) : PQerrorMessage(conn_)), secrets_);
        if (state == nullptr) return store_error(store_errc::database_error, message);
        return store_error(map_sqlstate(state), std::string(state) + ": " + message);
    }

    static constexpr std::size_t max_statements = 128;
    PGconn* conn_;
    /// The password(s) of the URL: scrubbed from every message, a second line of defence.
    std::vector<std::string> secrets_;
    std::unordered_map<std::string, std::string> statements_;
};

}  // namespace

StoreResult<std::unique_ptr<Session>> open_postgres(const DatabaseUrl& url, const StoreOptions& options,
                                                    bool for_init) {
    // libpq's connect_timeout is in whole seconds and treats values below 2 as 2.
    const auto seconds = std::max<long long>(2, (options.connect_timeout.count() + 999) / 1000);
    const std::string timeout = std::to_string(seconds);
    // Keyword/value pairs, never the URL (expand_dbname = 0): libpq's own URL parser would end
    // the password at its first '@'. Later pairs win, so the options override the URL.
    std::vector<const char*> keys, values;
    for (const auto& [keyword, value] : url.settings) {
        keys.push_back(keyword.c_str());
        values.push_back(value.c_str());
    }
    keys.insert(keys.end(), {"connect_timeout", "fallback_application_name", nullptr});
    values.insert(values.end(), {timeout.c_str(), "fencelock", nullptr});
    std::vector<std::string> secrets = url.secrets();
    PGconn* conn = PQconnectdbParams(keys.data(), values.data(), 0);
    if (conn == nullptr) return std::unexpected(store_error(store_errc::unavailable, "out of memory"));
    if (PQstatus(conn) != CONNECTION_OK) {
        std::string message = scrub(trim(PQerrorMessage(conn)), secrets);
        PQfinish(conn);
        return std::unexpected(store_error(store_errc::unavailable, url.redacted() + ": " + message));
    }
    auto session = std::make_unique<PostgresSession>(conn, std::move(secrets));
    const std::string set = "SET statement_timeout = " + std::to_string(options.statement_timeout.count());
    if (auto r = session->exec_script(set); !r) return std::unexpected(r.error());
    if (!for_init) {
        if (auto r = check_schema(*session); !r) return std::unexpected(r.error());
    }
    return std::unique_ptr<Session>(std::move(session));
}

}  // namespace fencelock::detail
