#include "store_fixture.hpp"

#include <unistd.h>

#include <memory>
#include <mutex>
#include <sstream>

#include "store/session.hpp"

namespace fencelock::test_support {

using local::PostgresServer;

PostgresServer& shared_postgres() {
    // One server per test process; destroyed (stopped, removed) at normal exit.
    static std::unique_ptr<PostgresServer> server = std::make_unique<PostgresServer>();
    return *server;
}

TestDatabase::TestDatabase(Backend backend) : backend_(backend) {
    if (backend == Backend::postgresql) {
        url_ = shared_postgres().create_database("store");
        return;
    }
    char tmpl[] = "/tmp/fencelock-sqlite-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
    dir_ = tmpl;
    url_ = "sqlite://" + (dir_ / "store.db").string();
}

TestDatabase::~TestDatabase() {
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
}

namespace {

std::unique_ptr<detail::Session> raw_session(const std::string& url) {
    auto parsed = parse_database_url(url);
    if (!parsed) throw std::runtime_error(parsed.error().message);
    auto s = detail::open_session(*parsed, StoreOptions{.url = url}, true);
    if (!s) throw std::runtime_error("cannot open " + url + ": " + s.error().detail);
    return std::move(*s);
}

}  // namespace

std::string TestDatabase::query(const std::string& sql) const {
    auto s = raw_session(url_);
    auto rows = s->exec(sql, std::span<const detail::Param>{});
    if (!rows) throw std::runtime_error("query failed: " + sql + ": " + rows.error().detail);
    std::string out;
    for (const auto& row : rows->rows) {
        for (std::size_t i = 0; i < row.size(); ++i) out += (i ? "|" : "") + row[i].value_or("<null>");
        out += "\n";
    }
    return out;
}

void TestDatabase::execute(const std::string& sql) const {
    auto s = raw_session(url_);
    if (auto r = s->exec_script(sql); !r) throw std::runtime_error("execute failed: " + sql + ": " + r.error().detail);
}

std::string TestDatabase::snapshot() const {
    std::string out;
    for (const char* q :
         {"SELECT * FROM fencelock_schema", "SELECT * FROM fencelock_resources ORDER BY resource",
          "SELECT * FROM fencelock_idempotency ORDER BY key", "SELECT * FROM fencelock_outbox ORDER BY seq"})
        out += std::string(q) + "\n" + query(q);
    return out;
}

FencedStore open_store(const std::string& url, StoreOptions options) {
    options.url = url;
    auto s = FencedStore::create(options);
    if (!s) throw std::runtime_error("bad options: " + s.error().field + ": " + s.error().message);
    return std::move(*s);
}

ResourceName res(const std::string& name) { return ResourceName::make(name).value(); }
OwnerToken owner(const std::string& token) { return OwnerToken::make(token).value(); }

void StoreTest::SetUp() {
    db = std::make_unique<TestDatabase>(GetParam());
    store = std::make_unique<FencedStore>(open_store(db->url(), StoreOptions{.pool_size = 8}));
    auto v = store->init();
    ASSERT_TRUE(v) << v.error().detail;
    ASSERT_EQ(*v, store_schema_version);
}

void StoreTest::create(const std::string& name, const std::string& value) {
    auto r = store->create_resource(res(name), value);
    ASSERT_TRUE(r) << r.error().detail;
    ASSERT_EQ(*r, CreateStatus::created);
}

Record StoreTest::read(const std::string& name) {
    auto r = store->read(res(name));
    if (!r) throw std::runtime_error("read failed: " + r.error().detail);
    if (!*r) throw std::runtime_error("no resource " + name);
    return **r;
}

std::string backend_name(const ::testing::TestParamInfo<Backend>& info) {
    return info.param == Backend::sqlite ? "sqlite" : "postgresql";
}

void install_history(const TestDatabase& db) {
    if (db.backend() == Backend::postgresql) {
        db.execute(
            "CREATE TABLE test_history (id bigserial PRIMARY KEY, resource text, fence bigint, value text);"
            "CREATE FUNCTION test_record() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
            "INSERT INTO test_history (resource, fence, value) VALUES (NEW.resource, NEW.last_fence, NEW.value); "
            "RETURN NEW; END $$;"
            "CREATE TRIGGER test_record AFTER UPDATE ON fencelock_resources FOR EACH ROW "
            "EXECUTE FUNCTION test_record();");
    } else {
        db.execute(
            "CREATE TABLE test_history (id INTEGER PRIMARY KEY AUTOINCREMENT, resource TEXT, fence INTEGER, value TEXT);"
            "CREATE TRIGGER test_record AFTER UPDATE ON fencelock_resources BEGIN "
            "INSERT INTO test_history (resource, fence, value) VALUES (NEW.resource, NEW.last_fence, NEW.value); END;");
    }
}

std::vector<std::uint64_t> history(const TestDatabase& db, const std::string& resource) {
    std::istringstream in(db.query("SELECT fence FROM test_history WHERE resource = '" + resource + "' ORDER BY id"));
    std::vector<std::uint64_t> out;
    for (std::string line; std::getline(in, line);) out.push_back(std::stoull(line));
    return out;
}

}  // namespace fencelock::test_support
