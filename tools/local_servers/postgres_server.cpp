#include "local_servers/postgres_server.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <thread>

#include "local_servers/redis_server.hpp"

namespace fencelock::local {
namespace {

std::string quote(const std::string& s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

/// Runs a shell command; returns {exit status, stdout+stderr}.
std::pair<int, std::string> shell(const std::string& cmd) {
    std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen((cmd + " 2>&1").c_str(), "r"), pclose);
    if (!pipe) return {-1, "popen failed"};
    std::string out;
    std::array<char, 4096> buf{};
    std::size_t n;
    while ((n = fread(buf.data(), 1, buf.size(), pipe.get())) > 0) out.append(buf.data(), n);
    int status = pclose(pipe.release());
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

}  // namespace

std::filesystem::path postgres_bin_dir() {
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::path best;
    for (int v = 20; v >= 12; --v) {
        fs::path p = fs::path("/usr/lib/postgresql") / std::to_string(v) / "bin";
        if (fs::exists(p / "initdb", ec)) return p;
    }
    return best;
}

PostgresServer::PostgresServer() : port_(free_port()), bin_(postgres_bin_dir()) {
    if (bin_.empty()) throw std::runtime_error("PostgreSQL not installed (no /usr/lib/postgresql/*/bin/initdb)");
    char tmpl[] = "/tmp/fencelock-pg-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
    dir_ = tmpl;
    const std::string d = dir_.string();
    const std::string as_pg = "runuser -u postgres -- env PATH=" + quote(bin_.string() + ":/usr/bin:/bin") + " ";
    auto step = [&](const std::string& what, const std::string& cmd) {
        auto [rc, out] = shell(cmd);
        if (rc != 0) {
            std::error_code ec;
            std::filesystem::remove_all(dir_, ec);
            throw std::runtime_error(what + " failed (" + std::to_string(rc) + "): " + out);
        }
    };
    step("chown", "chown postgres:postgres " + quote(d));
    step("initdb",
         as_pg + "initdb -D " + quote(d + "/data") + " -U postgres -A trust -E UTF8 --no-locale --no-sync >/dev/null");
    running_ = true;
    step("pg_ctl start", as_pg + "pg_ctl -D " + quote(d + "/data") + " -l " + quote(d + "/server.log") +
                             " -w -t 30 -o " +
                             quote("-c listen_addresses=127.0.0.1 -p " + std::to_string(port_) + " -k " + d +
                                   " -c fsync=off -c max_connections=200") +
                             " start >/dev/null");
}

PostgresServer::~PostgresServer() {
    stop();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
}

void PostgresServer::stop() noexcept {
    if (!running_) return;
    running_ = false;
    try {
        auto [rc, out] = shell("runuser -u postgres -- " + quote((bin_ / "pg_ctl").string()) + " -D " +
                               quote((dir_ / "data").string()) + " -m immediate -w stop >/dev/null");
        if (rc != 0) std::fprintf(stderr, "PostgresServer: pg_ctl stop failed: %s\n", out.c_str());
    } catch (...) {
        std::fprintf(stderr, "PostgresServer: pg_ctl stop failed\n");
    }
}

std::string PostgresServer::url(const std::string& dbname) const {
    return "postgresql://postgres@127.0.0.1:" + std::to_string(port_) + "/" + dbname;
}

std::string PostgresServer::create_database(const std::string& prefix) {
    static std::atomic<int> counter{0};
    const std::string name = prefix + "_" + std::to_string(::getpid()) + "_" + std::to_string(++counter);
    psql("postgres", "CREATE DATABASE " + name);
    return url(name);
}

std::string PostgresServer::psql(const std::string& dbname, const std::string& sql) const {
    auto [rc, out] = shell(quote((bin_ / "psql").string()) + " -X -q -v ON_ERROR_STOP=1 -At -h 127.0.0.1 -p " +
                           std::to_string(port_) + " -U postgres -d " + quote(dbname) + " -c " + quote(sql));
    if (rc != 0) throw std::runtime_error("psql failed: " + out);
    while (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
}

void PostgresServer::require_password(const std::string& role, const std::string& password) {
    std::string literal = "'";
    for (char c : password) literal += c == '\'' ? std::string("''") : std::string(1, c);
    psql("postgres", "CREATE ROLE " + role + " LOGIN SUPERUSER PASSWORD " + literal + "'");
    const auto hba = dir_ / "data" / "pg_hba.conf";
    std::string rules;
    {
        std::ifstream in(hba);
        rules.assign(std::istreambuf_iterator<char>(in), {});
    }
    // The first matching line wins: ours goes before the trust lines.
    std::ofstream(hba, std::ios::trunc) << "host all " << role << " 127.0.0.1/32 scram-sha-256\n" << rules;
    psql("postgres", "SELECT pg_reload_conf()");
    // The reload is asynchronous: wait until a password-less login of the role is refused.
    const std::string probe = "env -u PGPASSWORD " + quote((bin_ / "psql").string()) + " -X -w -h 127.0.0.1 -p " +
                              std::to_string(port_) + " -U " + quote(role) + " -d postgres -c 'SELECT 1'";
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (shell(probe).first == 0) {
        if (std::chrono::steady_clock::now() >= deadline)
            throw std::runtime_error("PostgreSQL did not start demanding a password from " + role);
        std::this_thread::sleep_for(std::chrono::milliseconds(2));  // polling a reloading server
    }
}

}  // namespace fencelock::local
