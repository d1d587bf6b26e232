#include "cli.hpp"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "fencelock/duration.hpp"
#include "fencelock/options.hpp"
#include "posix/stop_schedule.hpp"
#include "secrets.hpp"

namespace fencelock::cli {

bool caller_ignored_sigpipe = false;

namespace {
std::ostream* json_out = &std::cout;
}

void emit(const nlohmann::json& object) {
    if (json_out == nullptr) return;
    // Resource names are arbitrary bytes: replace invalid UTF-8 rather than throw.
    *json_out << object.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << std::endl;
}

void print_records(Format format, const std::vector<Column>& columns, const std::vector<nlohmann::json>& records,
                   const std::string& none) {
    if (format == Format::json) {
        for (const auto& record : records) emit(record);
        return;
    }
    if (records.empty()) std::cout << none << "\n";
    else print_table(std::cout, columns, records);
    std::cout.flush();
}

void json_to_stderr() { json_out = &std::cerr; }
void json_off() { json_out = nullptr; }

int fail(int exit_code, std::string_view error, std::string_view message, std::string_view field,
         std::string_view code) {
    nlohmann::json out{{"error", error}, {"code", code.empty() ? error : code}, {"message", message}};
    if (!field.empty()) out["field"] = field;
    std::cerr << "fencelock: " << (field.empty() ? "" : std::string(field) + ": ") << message << "\n";
    emit(out);
    return exit_code;
}

std::string redis_error_name(std::error_code ec) {
    if (ec.category() == eviction_category()) return "eviction_policy";
    if (ec.category() != error_category()) return "system";
    switch (static_cast<errc>(ec.value())) {
        case errc::unavailable: return "unavailable";
        case errc::reply_timeout: return "reply_timeout";
        case errc::connection_lost: return "connection_lost";
        case errc::auth_failed: return "auth_failed";
        case errc::server_busy: return "server_busy";
        case errc::corrupt_key: return "corrupt_key";
        case errc::protocol_error: return "protocol_error";
        case errc::not_master: return "not_master";
        case errc::replicas_unavailable: return "replicas_unavailable";
        case errc::is_sentinel: return "is_sentinel";
        case errc::failover_grace: return "failover_grace";
        case errc::not_replicated: return "not_replicated";
        case errc::not_cluster: return "not_cluster";
        case errc::fence_exhausted: return "fence_exhausted";
    }
    return "unknown";
}

std::string redis_error_code(std::error_code ec) {
    const std::string cause = error_cause(ec);
    return cause.empty() ? redis_error_name(ec) : cause;
}

int redis_failure(std::error_code ec) {
    nlohmann::json out{{"error", "redis"},
                       {"code", redis_error_code(ec)},
                       {"kind", to_string(classify(ec))},
                       {"message", ec.message()}};
    // The server's own reply (and the keys), which the error code cannot carry.
    const std::string detail = error_detail(ec);
    if (!detail.empty()) out["detail"] = detail;
    std::cerr << "fencelock: " << ec.message() << (detail.empty() ? "" : ": " + detail) << " ["
              << to_string(classify(ec)) << "]\n";
    emit(out);  // last: for run, stderr's last line is the JSON
    return exit_unavailable;
}

std::chrono::milliseconds parse_duration_flag(std::string_view flag, const std::string& text) {
    auto d = parse_duration(text);
    if (!d) throw InputError{std::string(flag), d.error().message};
    return *d;
}

std::chrono::milliseconds stop_grace_flag(std::string_view flag, bool given, const std::string& text,
                                          std::chrono::milliseconds lease) {
    using std::chrono::milliseconds;
    const milliseconds renew_every = std::max(lease / 3, milliseconds(1));  // the keeper's default
    const milliseconds fits = max_stop_grace(lease, renew_every, ClientOptions{}.clock_drift_factor);
    if (!given) return std::min(milliseconds(10'000), fits);
    const milliseconds grace = parse_duration_flag(flag, text);
    if (grace > fits)
        throw InputError{std::string(flag),
                         format_duration(grace) + " does not fit a " + format_duration(lease) +
                             " lease: the command must be gone before the lease can end, and a healthy lease leaves " +
                             format_duration(fits) + " (lease x 0.99 - 1.5 x the renewal interval); give at most " +
                             format_duration(fits) + " or a longer --lease"};
    return grace;
}

ResourceName parse_resource(const std::string& text) {
    auto r = ResourceName::make(text);
    if (!r) throw InputError{"RESOURCE", r.error().message};
    return *r;
}

OwnerToken parse_owner(const std::string& text) {
    auto o = OwnerToken::make(text);
    if (!o) throw InputError{"--owner", o.error().message};
    return *o;
}

RedisTarget redis_target(const Globals& globals) {
    std::string url = globals.redis_url;
    if (url.empty()) {
        const char* env = std::getenv("FENCELOCK_REDIS_URL");
        url = env != nullptr && *env != '\0' ? env : "redis://127.0.0.1:6379";
    }
    auto endpoint = parse_redis_url(url);
    if (!endpoint) throw InputError{"--redis", endpoint.error().message};
    if (std::string password = password_from_outside(globals.password_file); !password.empty()) {
        const char* from = globals.password_file.empty() ? "$FENCELOCK_REDIS_PASSWORD" : "--redis-password-file";
        if (!endpoint->password.empty())
            throw InputError{from, "the Redis URL carries a password too: give it in one place only"};
        endpoint->password = std::move(password);
    }
    // TLS options outside the URL: a flag, else its variable; a value also in the URL's query is
    // refused rather than one silently beating the other. `from` names where each value came
    // from, for the checks below ("--redis": the URL's query).
    TlsOptions& tls = endpoint->tls;
    struct Outside {
        std::string_view flag, variable, key;
        const std::string& given;
        std::string& value;
        std::string from = "--redis";
    };
    Outside outside[] = {{"--tls-ca", "FENCELOCK_TLS_CA", "tls_ca", globals.tls_ca, tls.ca_file},
                         {"--tls-ca-dir", "FENCELOCK_TLS_CA_DIR", "tls_ca_dir", globals.tls_ca_dir, tls.ca_dir},
                         {"--tls-cert", "FENCELOCK_TLS_CERT", "tls_cert", globals.tls_cert, tls.cert_file},
                         {"--tls-key", "FENCELOCK_TLS_KEY", "tls_key", globals.tls_key, tls.key_file},
                         {"--tls-server-name", "FENCELOCK_TLS_SERVER_NAME", "tls_server_name", globals.tls_server_name,
                          tls.server_name}};
    auto need_tls = [&](const std::string& from) {
        if (!tls.enabled)
            throw InputError{from, "TLS options need a rediss://, rediss-sentinel:// or rediss-cluster:// URL"};
    };
    auto once = [](const std::string& from, std::string_view key) {
        throw InputError{from, "the Redis URL's query has " + std::string(key) + " too: give it in one place only"};
    };
    for (Outside& o : outside) {
        const char* env = std::getenv(std::string(o.variable).c_str());
        const bool flag_given = !o.given.empty();
        if (!flag_given && (env == nullptr || *env == '\0')) continue;
        std::string from = flag_given ? std::string(o.flag) : "$" + std::string(o.variable);
        need_tls(from);
        if (!o.value.empty()) once(from, o.key);
        o.value = flag_given ? o.given : std::string(env);
        o.from = std::move(from);
    }
    {
        std::string from;
        if (globals.tls_insecure) {
            from = "--tls-insecure";
        } else if (const char* env = std::getenv("FENCELOCK_TLS_INSECURE"); env != nullptr && *env != '\0') {
            const std::string_view v = env;
            if (v == "1" || v == "true") from = "$FENCELOCK_TLS_INSECURE";
            else if (v != "0" && v != "false")
                throw InputError{"$FENCELOCK_TLS_INSECURE", "must be 1 (or true) or 0 (or false)"};
        }
        if (!from.empty()) {
            need_tls(from);
            if (tls.insecure) once(from, "tls_insecure");
            tls.insecure = true;
        }
    }
    const Outside& cert = outside[2];
    const Outside& key = outside[3];
    if (tls.cert_file.empty() != tls.key_file.empty())
        throw tls.cert_file.empty()
            ? InputError{key.from, "a client key needs its certificate (--tls-cert, or tls_cert in the URL)"}
            : InputError{cert.from, "a client certificate needs its key (--tls-key, or tls_key in the URL)"};
    // Open each file (and the CA directory) now, so a typo is an input error naming where it
    // was given rather than a failure at the first connection. Paths are no secret.
    for (const Outside& o : outside) {
        if (o.value.empty() || o.key == "tls_server_name") continue;
        const bool dir = o.key == "tls_ca_dir";
        const int fd = ::open(o.value.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | (dir ? O_DIRECTORY : 0));
        struct stat st {};
        const int error = fd < 0 ? errno : ::fstat(fd, &st) != 0 ? errno : !dir && S_ISDIR(st.st_mode) ? EISDIR : 0;
        if (fd >= 0) ::close(fd);
        if (error != 0)
            throw InputError{o.from, (o.from == "--redis" ? std::string(o.key) + ": " : std::string()) +
                                         "cannot read " + o.value + ": " + std::strerror(error)};
    }
    endpoint->allow_eviction = globals.allow_eviction;
    const auto timeout = parse_duration_flag("--timeout", globals.timeout);
    if (timeout > limits::timeout) throw InputError{"--timeout", "must be at most " + format_duration(limits::timeout)};
    return {*endpoint, timeout};
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
    std::vector<char*> out;
    out.reserve(strings.size() + 1);
    for (auto& s : strings) out.push_back(s.data());
    out.push_back(nullptr);
    return out;
}

void require_supported(const LockClient& client, const AcquireOptions& options) {
    if (auto ok = client.supports(options); !ok) {
        std::string flag = "--" + ok.error().field;
        std::replace(flag.begin(), flag.end(), '_', '-');
        throw InputError{flag, ok.error().message};
    }
}

AcquireOptions parse_acquire_options(const CLI::App& command, const std::string& lease, const std::string& wait,
                                     const std::string& max_hold) {
    AcquireOptions options{.lease = parse_duration_flag("--lease", lease)};
    options.max_hold = command.count("--max-hold") ? parse_duration_flag("--max-hold", max_hold)
                                                   : std::max(options.max_hold, options.lease);
    if (command.count("--wait")) options.wait = parse_duration_flag("--wait", wait);
    if (auto ok = options.validate(); !ok) {
        std::string flag = "--" + ok.error().field;
        std::replace(flag.begin(), flag.end(), '_', '-');
        throw InputError{flag, ok.error().message};
    }
    return options;
}

bool tls_insecure(const Globals& globals) {
    const RedisEndpoint endpoint = redis_target(globals).endpoint;
    return endpoint.tls.enabled && endpoint.tls.insecure;
}

/// --label, else $FENCELOCK_LABEL; checked: it is stored with every lease.
std::string holder_label(const Globals& globals) {
    std::string label = globals.label;
    const char* from = "--label";
    if (label.empty()) {
        const char* env = std::getenv("FENCELOCK_LABEL");
        label = env != nullptr ? env : "";
        from = "$FENCELOCK_LABEL";
    }
    if (label.size() > max_label_bytes)
        throw InputError{from, "is " + std::to_string(label.size()) + " bytes long; at most " +
                                   std::to_string(max_label_bytes) + " are stored with a lease"};
    if (std::any_of(label.begin(), label.end(), [](unsigned char c) { return c < 0x20 || c == 0x7f; }))
        throw InputError{from, "must not hold control characters (newlines, tabs, NUL)"};
    return label;
}

ClientOptions client_options(const Globals& globals, std::shared_ptr<LockObserver> observer, std::size_t connections) {
    const auto [endpoint, timeout] = redis_target(globals);
    return ClientOptions{.endpoint = endpoint,
                         .connect_timeout = timeout,
                         .command_timeout = timeout,
                         .pool_size = connections,
                         .holder_label = holder_label(globals),
                         .observer = std::move(observer)};
}

LockClient make_client(const Globals& globals, std::shared_ptr<LockObserver> observer, std::size_t connections) {
    auto client = LockClient::create(client_options(globals, std::move(observer), connections));
    if (!client) throw InputError{client.error().field, client.error().message};
    return std::move(*client);
}

}  // namespace fencelock::cli
