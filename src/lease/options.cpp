#include "fencelock/options.hpp"

#include "common/option_check.hpp"

namespace fencelock {
using detail::at_least;
using detail::at_most;
using detail::bad;

std::expected<void, OptionError> validate_lease(milliseconds lease) {
    if (auto r = at_least("lease", lease, milliseconds(10)); !r) return r;
    return at_most("lease", lease, limits::lease);
}

std::expected<void, OptionError> ClientOptions::validate() const {
    if (endpoint.host.empty()) return bad("endpoint.host", "must not be empty");
    if (endpoint.port == 0) return bad("endpoint.port", "must be 1..65535");
    if (endpoint.db < 0) return bad("endpoint.db", "must be >= 0");
    if (!endpoint.user.empty() && endpoint.password.empty())
        return bad("endpoint.password", "an ACL user needs a password");
    // gRPC takes PEM files and always verifies the server (etcds://).
    if (endpoint.uses_etcd() && !endpoint.tls.ca_dir.empty())
        return bad("endpoint.tls.ca_dir", "etcd's TLS takes a CA file (tls_ca), not a directory");
    if (endpoint.uses_etcd() && endpoint.tls.insecure)
        return bad("endpoint.tls.insecure", "etcd's TLS always verifies the server: give its CA (tls_ca)");
    if (key_prefix.find_first_of("{}") != std::string::npos)
        return bad("key_prefix", "must not contain '{' or '}' (it would move the Cluster hash tag)");
    if (connect_timeout <= milliseconds::zero()) return bad("connect_timeout", "must be positive");
    if (command_timeout <= milliseconds::zero()) return bad("command_timeout", "must be positive");
    if (auto r = at_most("connect_timeout", connect_timeout, limits::timeout); !r) return r;
    if (auto r = at_most("command_timeout", command_timeout, limits::timeout); !r) return r;
    if (pool_size == 0) return bad("pool_size", "must be at least 1");
    if (!(clock_drift_factor >= 0.0 && clock_drift_factor < 0.5))
        return bad("clock_drift_factor", "must be in [0, 0.5)");
    if (auto r = at_least("clock_probe_interval", clock_probe_interval, milliseconds(100)); !r) return r;
    if (auto r = at_most("clock_probe_interval", clock_probe_interval, limits::timeout); !r) return r;
    return {};
}

std::expected<void, OptionError> AcquireOptions::validate() const {
    if (auto r = validate_lease(lease); !r) return r;
    if (auto r = at_least("max_hold", max_hold, lease, "the lease"); !r) return r;
    if (auto r = at_most("max_hold", max_hold, limits::max_hold); !r) return r;
    if (wait < milliseconds::zero()) return bad("wait", "must not be negative");
    if (auto r = at_most("wait", wait, limits::wait); !r) return r;
    if (auto r = backoff.validate(); !r) return r;
    if (replicas > 100) return bad("replicas", "must be at most 100, not " + std::to_string(replicas));
    if (auto r = at_least("replica_timeout", replica_timeout, milliseconds(1)); !r) return r;
    return at_most("replica_timeout", replica_timeout, limits::timeout);
}

// WAIT's reply comes after the acquire's round trip and up to replica_timeout: half the
// command timeout leaves the other half for the round trip, so a slow replica fails the
// acquisition with not_replicated instead of timing out the (shared) connection.
std::expected<void, OptionError> AcquireOptions::validate_for(milliseconds command_timeout) const {
    if (auto r = validate(); !r) return r;
    if (replicas > 0 && replica_timeout * 2 > command_timeout)
        return bad("replica_timeout",
                   "must be at most half the command timeout (" + format_duration(command_timeout) + ")");
    return {};
}

}  // namespace fencelock
