#include "fencelock/error.hpp"

#include <string>

namespace fencelock {
namespace {

class Category final : public std::error_category {
public:
    const char* name() const noexcept override { return "fencelock"; }
    std::string message(int value) const override {
        switch (static_cast<errc>(value)) {
            case errc::unavailable: return "Redis unavailable (could not connect)";
            case errc::reply_timeout: return "no reply from Redis in time (outcome unknown)";
            case errc::connection_lost:
                return "connection to Redis lost after sending (outcome unknown)";
            case errc::auth_failed: return "Redis authentication failed";
            case errc::server_busy: return "Redis cannot serve the request now";
            case errc::corrupt_key: return "a lock key has an unexpected type or content";
            case errc::protocol_error: return "unexpected reply from Redis";
        }
        return "unknown fencelock error";
    }
};

}  // namespace

const std::error_category& error_category() noexcept {
    static const Category category;
    return category;
}

failure_kind classify(std::error_code ec) noexcept {
    if (ec.category() != error_category()) return failure_kind::fatal;
    switch (static_cast<errc>(ec.value())) {
        case errc::unavailable:
        case errc::server_busy: return failure_kind::retryable;
        case errc::reply_timeout:
        case errc::connection_lost: return failure_kind::outcome_unknown;
        case errc::auth_failed:
        case errc::corrupt_key:
        case errc::protocol_error: return failure_kind::fatal;
    }
    return failure_kind::fatal;
}

std::string_view to_string(failure_kind kind) noexcept {
    switch (kind) {
        case failure_kind::retryable: return "retryable";
        case failure_kind::outcome_unknown: return "outcome_unknown";
        case failure_kind::fatal: return "fatal";
    }
    return "fatal";
}

}  // namespace fencelock
