
#include <array>
#include <cerrno>
#include <system_error>

#include "common/random_id.hpp"
#include "store/session.hpp"

namespace fencelock::detail {

StoreResult<std::unique_ptr<Session>> open_session(const DatabaseUrl& url, const StoreOptions& options, bool for_init) {
    return url.backend == StoreBackend::sqlite ? open_sqlite(url, options, for_init)
                                               : open_postgres(url, options, for_init);
}

StoreResult<void> check_schema(Session& session) {
    auto rows = session.exec("SELECT version FROM fencelock_schema WHERE id = 1", std::span<const Param>{});
    if (!rows) {
        if (is(rows.error(), store_errc::statement_failed))
            return std::unexpected(store_error(store_errc::invalid_schema, rows.error().detail));
        return std::unexpected(rows.error());
    }
    if (rows->rows.empty() || !rows->rows[0][0])
        return std::unexpected(store_error(store_errc::invalid_schema, "fencelock_schema has no version row"));
    if (*rows->rows[0][0] != std::to_string(store_schema_version))
        return std::unexpected(store_error(store_errc::invalid_schema, "schema version " + *rows->rows[0][0] +
                                                                           ", this library uses " +
                                                                           std::to_string(store_schema_version)));
    return {};
}

SessionPool::Loan::~Loan() {
    if (!session_ || !session_->healthy()) return;
    std::lock_guard lock(pool_->mutex_);
    if (pool_->idle_.size() < pool_->options_.pool_size) pool_->idle_.push_back(std::move(session_));
}

StoreResult<SessionPool::Loan> SessionPool::borrow() {
    {
        std::lock_guard lock(mutex_);
        if (!idle_.empty()) {
            auto s = std::move(idle_.back());
            idle_.pop_back();
            return Loan(*this, std::move(s));
        }
    }
    auto s = open_session(url_, options_, false);
    if (!s) return std::unexpected(s.error());
    return Loan(*this, std::move(*s));
}

std::string random_id() { return random_hex_id(); }

}  // namespace fencelock::detail
