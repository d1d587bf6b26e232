#pragma once
// PostgreSQL for the fault scenarios. Under ctest one server serves the whole run: the
// faults_postgres fixture (tests/server_fixture_main.cpp) starts it before the first PostgreSQL
// scenario and stops it after the last, and $FENCELOCK_FAULTS_PG names its state file. Run by
// hand (no such variable), a test process starts a server of its own. Either way each test
// gets a database of its own.
#include <cstdint>
#include <string>

namespace fencelock::faults {

/// Creates an empty database and returns its URL (postgresql://postgres@127.0.0.1:PORT/NAME).
/// Throws std::runtime_error when no server is reachable.
std::string fresh_postgres_database();

/// `url` with its port replaced (to reach the same database through a fault proxy).
std::string with_port(const std::string& url, std::uint16_t port);

/// The port of a postgresql://user@host:PORT/db URL.
std::uint16_t port_of(const std::string& url);

}  // namespace fencelock::faults
