#include "faults/postgres_db.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <utility>

#include "local_servers/child_process.hpp"
#include "local_servers/postgres_server.hpp"

namespace fencelock::faults {
namespace {

// postgresql://postgres@127.0.0.1:PORT/postgres of the server this test may use.
std::string admin_url() {
    if (const char* state = std::getenv("FENCELOCK_FAULTS_PG")) {
        std::ifstream in(state);
        std::string url;
        if (!std::getline(in, url) || url.empty())
            throw std::runtime_error(std::string("no PostgreSQL state in ") + state +
                                     ": did the faults_postgres fixture run?");
        return url;
    }
    // Stopped and removed when the process exits.
    static const auto own = std::make_unique<local::PostgresServer>();
    return own->url();
}

// Host part and port: postgresql://user@HOST:PORT/db.
std::pair<std::size_t, std::size_t> port_span(const std::string& url) {
    const auto at = url.find('@');
    const auto colon = url.find(':', at == std::string::npos ? 0 : at);
    const auto slash = url.find('/', colon);
    if (at == std::string::npos || colon == std::string::npos || slash == std::string::npos)
        throw std::invalid_argument("not a postgresql://user@host:port/db URL: " + url);
    return {colon + 1, slash - colon - 1};
}

}  // namespace

std::string fresh_postgres_database() {
    static std::atomic<int> counter{0};
    const std::string admin = admin_url();
    const std::string name = "faults_" + std::to_string(::getpid()) + "_" + std::to_string(++counter);
    const auto psql = (local::postgres_bin_dir() / "psql").string();
    auto r =
        local::run_process({psql, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", admin, "-c", "CREATE DATABASE " + name});
    if (r.exit_code != 0) throw std::runtime_error("CREATE DATABASE " + name + " failed: " + r.err);
    return admin.substr(0, admin.rfind('/') + 1) + name;
}

std::string with_port(const std::string& url, std::uint16_t port) {
    const auto [start, length] = port_span(url);
    return url.substr(0, start) + std::to_string(port) + url.substr(start + length);
}

std::uint16_t port_of(const std::string& url) {
    const auto [start, length] = port_span(url);
    return static_cast<std::uint16_t>(std::stoi(url.substr(start, length)));
}

}  // namespace fencelock::faults
