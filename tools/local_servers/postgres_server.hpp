#pragma once
// A throwaway PostgreSQL server for tests and benchmarks: a free loopback port, a
// private directory under /tmp owned by the postgres user (initdb and pg_ctl refuse root),
// fsync off, stopped and removed when the object dies. Talks to the server only through the
// PostgreSQL command-line tools, so this file needs no libpq.
#include <cstdint>
#include <filesystem>
#include <string>

namespace fencelock::local {

class PostgresServer {
public:
    /// initdb + pg_ctl start (about a second). Throws std::runtime_error when PostgreSQL is not
    /// installed or does not start; the message points at the server log.
    PostgresServer();
    /// Stops the server (fast shutdown) and removes its directory. Never throws.
    ~PostgresServer();
    PostgresServer(const PostgresServer&) = delete;
    PostgresServer& operator=(const PostgresServer&) = delete;

    std::uint16_t port() const { return port_; }
    /// postgresql://postgres@127.0.0.1:PORT/postgres
    std::string url() const { return url(std::string("postgres")); }
    /// postgresql://postgres@127.0.0.1:PORT/<dbname>
    std::string url(const std::string& dbname) const;

    /// Creates a database named `<prefix>_<pid>_<counter>` and returns its URL, so every test
    /// (and every test process sharing a server) works in a database of its own.
    std::string create_database(const std::string& prefix = "t");

    /// Runs `sql` with psql in `dbname` (unaligned, tuples only, fields separated by '|') and
    /// returns its output; throws std::runtime_error when psql fails.
    std::string psql(const std::string& dbname, const std::string& sql) const;

    /// Creates a login role with `password` and makes the server demand that password
    /// (scram-sha-256) from this role over TCP; every other role keeps trust. Returns once the
    /// server enforces it.
    void require_password(const std::string& role, const std::string& password);

    /// Stops the server now (the directory stays until destruction): a database that is
    /// gone for the tests that need one.
    void stop() noexcept;

private:
    std::uint16_t port_ = 0;
    std::filesystem::path dir_;
    std::filesystem::path bin_;
    bool running_ = false;
};

/// The directory holding initdb, pg_ctl and psql (/usr/lib/postgresql/<N>/bin), or empty.
std::filesystem::path postgres_bin_dir();

}  // namespace fencelock::local
