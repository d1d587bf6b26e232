#pragma once
// The conformance fixture: every TEST_P runs once on SQLite and once on PostgreSQL, each time in
// a fresh database of its own (a new SQLite file; a new database on a PostgreSQL server
// started once per test process).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "fencelock/store.hpp"
#include "local_servers/postgres_server.hpp"

namespace fencelock::test_support {

enum class Backend { sqlite, postgresql };
/// Readable parameter names in test output and ctest test names.
inline void PrintTo(Backend b, std::ostream* os) { *os << (b == Backend::sqlite ? "sqlite" : "postgresql"); }

/// The PostgreSQL server shared by all tests of this process, started on first use.
local::PostgresServer& shared_postgres();

/// A fresh, empty database of the given backend; removed (SQLite file) on destruction.
class TestDatabase {
public:
    explicit TestDatabase(Backend backend);
    ~TestDatabase();
    TestDatabase(const TestDatabase&) = delete;
    TestDatabase& operator=(const TestDatabase&) = delete;

    const std::string& url() const { return url_; }
    Backend backend() const { return backend_; }
    /// Runs SQL directly (not through FencedStore) and returns the rows as "a|b" lines.
    std::string query(const std::string& sql) const;
    /// Runs one or more statements without result.
    void execute(const std::string& sql) const;
    /// Every row of every fencelock table, in a stable order: equal snapshots mean nothing
    /// changed (updated_at included).
    std::string snapshot() const;

private:
    Backend backend_;
    std::string url_;
    std::filesystem::path dir_;
};

/// A store on `url` with the given options (url filled in); aborts the test on bad options.
FencedStore open_store(const std::string& url, StoreOptions options = {});
ResourceName res(const std::string& name);
OwnerToken owner(const std::string& token);

class StoreTest : public ::testing::TestWithParam<Backend> {
protected:
    void SetUp() override;
    /// Creates a resource row and checks it was created.
    void create(const std::string& name, const std::string& value = "");
    Record read(const std::string& name);

    std::unique_ptr<TestDatabase> db;
    std::unique_ptr<FencedStore> store;
};

std::string backend_name(const ::testing::TestParamInfo<Backend>& info);

/// An application table for transact() tests: test_effects(id BIGINT PRIMARY KEY, note TEXT).
inline constexpr const char* effects_table = "CREATE TABLE test_effects (id BIGINT PRIMARY KEY, note TEXT)";

/// Installs an AFTER UPDATE trigger on fencelock_resources that appends (resource, last_fence,
/// value) to test_history in commit order: an independent record of every accepted change.
void install_history(const TestDatabase& db);
/// The fences test_history recorded for `resource`, in order.
std::vector<std::uint64_t> history(const TestDatabase& db, const std::string& resource);

}  // namespace fencelock::test_support
