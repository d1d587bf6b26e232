#include "fencelock/options.hpp"

namespace fencelock {
namespace {

std::unexpected<OptionError> bad(std::string field, std::string message) {
    return std::unexpected(OptionError{std::move(field), std::move(message)});
}

}  // namespace

std::expected<void, OptionError> BackoffPolicy::validate() const {
    if (base <= milliseconds::zero()) return bad("backoff.base", "must be positive");
    if (max < base) return bad("backoff.max", "must be >= backoff.base");
    return {};
}

std::expected<void, OptionError> ClientOptions::validate() const {
    if (endpoint.host.empty()) return bad("endpoint.host", "must not be empty");
    if (endpoint.port == 0) return bad("endpoint.port", "must be 1..65535");
    if (endpoint.db < 0) return bad("endpoint.db", "must be >= 0");
    if (!endpoint.user.empty() && endpoint.password.empty())
        return bad("endpoint.password", "an ACL user needs a password");
    if (key_prefix.find_first_of("{}") != std::string::npos)
        return bad("key_prefix", "must not contain '{' or '}' (it would move the Cluster hash tag)");
    if (connect_timeout <= milliseconds::zero()) return bad("connect_timeout", "must be positive");
    if (command_timeout <= milliseconds::zero()) return bad("command_timeout", "must be positive");
    if (pool_size == 0) return bad("pool_size", "must be at least 1");
    if (!(clock_drift_factor >= 0.0 && clock_drift_factor < 0.5))
        return bad("clock_drift_factor", "must be in [0, 0.5)");
    return {};
}

std::expected<void, OptionError> AcquireOptions::validate() const {
    if (lease < milliseconds(10)) return bad("lease", "must be at least 10ms");
    if (max_hold < lease) return bad("max_hold", "must be >= lease");
    if (wait < milliseconds::zero()) return bad("wait", "must not be negative");
    if (auto r = backoff.validate(); !r) return r;
    return {};
}

}  // namespace fencelock
