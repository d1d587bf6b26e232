#include "fencelock/store_error.hpp"

namespace fencelock {
namespace {

class StoreCategory final : public std::error_category {
public:
    const char* name() const noexcept override { return "fencelock.store"; }
    std::string message(int value) const override {
        switch (static_cast<store_errc>(value)) {
            case store_errc::unavailable: return "database unavailable (could not connect or open)";
            case store_errc::connection_lost:
                return "connection to the database lost inside a transaction (rolled back)";
            case store_errc::commit_unknown: return "connection lost while committing (outcome unknown)";
            case store_errc::timeout: return "database statement or lock timeout (rolled back)";
            case store_errc::conflict: return "serialization failure or deadlock (rolled back)";
            case store_errc::serialization_exhausted:
                return "serialization failures or deadlocks on every attempt (rolled back)";
            case store_errc::invalid_schema: return "fencelock tables missing or of another version (run `store init`)";
            case store_errc::statement_failed: return "statement rejected by the database (rolled back)";
            case store_errc::database_error: return "database error";
            case store_errc::invalid_input: return "not store text (valid UTF-8 without NUL); nothing sent";
            case store_errc::transaction_broken:
                return "the mutation ended or broke the guarded transaction (not committed)";
        }
        return "unknown fencelock.store error";
    }
};

}  // namespace

const std::error_category& store_error_category() noexcept {
    static const StoreCategory category;
    return category;
}

failure_kind classify_store_error(std::error_code ec) noexcept {
    if (ec.category() != store_error_category()) return classify(ec);
    switch (static_cast<store_errc>(ec.value())) {
        case store_errc::unavailable:
        case store_errc::connection_lost:
        case store_errc::timeout:
        case store_errc::conflict:
        case store_errc::serialization_exhausted: return failure_kind::retryable;
        case store_errc::commit_unknown: return failure_kind::outcome_unknown;
        case store_errc::invalid_schema:
        case store_errc::statement_failed:
        case store_errc::database_error:
        case store_errc::invalid_input:
        case store_errc::transaction_broken: return failure_kind::fatal;
    }
    return failure_kind::fatal;
}

std::string to_name(std::error_code ec) {
    if (ec.category() != store_error_category()) return ec.message();
    switch (static_cast<store_errc>(ec.value())) {
        case store_errc::unavailable: return "unavailable";
        case store_errc::connection_lost: return "connection_lost";
        case store_errc::commit_unknown: return "commit_unknown";
        case store_errc::timeout: return "timeout";
        case store_errc::conflict: return "conflict";
        case store_errc::serialization_exhausted: return "serialization_exhausted";
        case store_errc::invalid_schema: return "invalid_schema";
        case store_errc::statement_failed: return "statement_failed";
        case store_errc::database_error: return "database_error";
        case store_errc::invalid_input: return "invalid_input";
        case store_errc::transaction_broken: return "transaction_broken";
    }
    return "unknown";
}

}  // namespace fencelock
