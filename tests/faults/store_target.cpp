#include "faults/store_target.hpp"

#include <stdexcept>

#include "store/session.hpp"

namespace fencelock::faults {
namespace {

constexpr std::string_view log_postgres =
    "CREATE TABLE IF NOT EXISTS fault_accepted (seq bigserial PRIMARY KEY, resource text NOT NULL, "
    "fence bigint NOT NULL, value text NOT NULL, key text NOT NULL)";
constexpr std::string_view log_sqlite =
    "CREATE TABLE IF NOT EXISTS fault_accepted (seq INTEGER PRIMARY KEY AUTOINCREMENT, resource TEXT NOT NULL, "
    "fence INTEGER NOT NULL, value TEXT NOT NULL, key TEXT NOT NULL)";

[[noreturn]] void fail(const std::string& what, const StoreError& e) {
    throw std::runtime_error(what + ": " + e.code.message() + " " + e.detail);
}

FencedStore open_store(const std::string& url, bool fencing) {
    StoreOptions options{.url = url, .pool_size = 8};
    options.enforce_fencing = fencing;
    auto store = FencedStore::create(options);
    if (!store) throw std::invalid_argument("StoreOptions." + store.error().field + ": " + store.error().message);
    return std::move(*store);
}

// A plain SQL session beside the store: the log is read back without going through the code
// under test.
std::unique_ptr<detail::Session> raw_session(const std::string& url) {
    auto parsed = parse_database_url(url);
    if (!parsed) throw std::invalid_argument(parsed.error().message);
    auto s = detail::open_session(*parsed, StoreOptions{.url = url}, false);
    if (!s) fail("open " + parsed->redacted(), s.error());
    return std::move(*s);
}

ResourceName name(const std::string& resource) {
    auto n = ResourceName::make(resource);
    if (!n) throw std::invalid_argument("bad resource name " + resource);
    return *n;
}

}  // namespace

std::unique_ptr<StoreTarget> StoreTarget::create(const std::string& url, bool fencing) {
    auto store = open_store(url, fencing);
    if (auto v = store.init(); !v) fail("store init", v.error());
    auto session = raw_session(url);
    const auto ddl = session->backend() == StoreBackend::postgresql ? log_postgres : log_sqlite;
    if (auto r = session->exec_script(ddl); !r) fail("create fault_accepted", r.error());
    return std::unique_ptr<StoreTarget>(new StoreTarget(url, fencing, std::move(store)));
}

std::unique_ptr<StoreTarget> StoreTarget::open(const std::string& url, bool fencing) {
    return std::unique_ptr<StoreTarget>(new StoreTarget(url, fencing, open_store(url, fencing)));
}

std::string StoreTarget::read(const std::string& resource) {
    auto r = store_.read(name(resource));
    if (!r) fail("store read", r.error());
    return *r ? (*r)->value : std::string();
}

std::uint64_t StoreTarget::last_fence(const std::string& resource) {
    auto r = store_.read(name(resource));
    if (!r) fail("store read", r.error());
    return *r ? (*r)->last_fence.value() : 0;
}

TargetWrite StoreTarget::write(const std::string& resource, const std::string& value, std::uint64_t fence,
                               const std::string& idempotency_key) {
    const auto res = name(resource);
    TransactOptions options;
    if (!idempotency_key.empty()) options.idempotency_key = idempotency_key;
    const Mutation mutation = [&](Transaction& tx) -> std::expected<void, StoreError> {
        if (auto r = tx.set_value(value); !r) return std::unexpected(r.error());
        return log_accepted(tx, resource, fence, value, idempotency_key);
    };
    auto r = store_.transact(res, FencingToken(fence), options, mutation);
    if (r && r->status == TransactStatus::not_found) {
        // The first write to a resource creates its guard row (idempotent), then writes.
        if (auto created = store_.create_resource(res); !created) fail("create resource", created.error());
        r = store_.transact(res, FencingToken(fence), options, mutation);
    }
    if (!r) fail("store transact", r.error());
    switch (r->status) {
        case TransactStatus::committed: return {TargetStatus::applied, r->last_fence.value()};
        case TransactStatus::stale: return {TargetStatus::stale, r->last_fence.value()};
        case TransactStatus::duplicate: return {TargetStatus::duplicate, r->last_fence.value()};
        default: throw std::runtime_error("store transact: unexpected " + std::string(to_string(r->status)));
    }
}

std::vector<AcceptedWrite> StoreTarget::accepted() {
    auto session = raw_session(url_);
    auto rows = session->exec("SELECT seq, resource, fence, value, key FROM fault_accepted ORDER BY seq",
                              std::span<const detail::Param>{});
    if (!rows) fail("read fault_accepted", rows.error());
    std::vector<AcceptedWrite> out;
    for (const auto& row : rows->rows)
        out.push_back({std::stoull(row[0].value_or("0")), row[1].value_or(""), std::stoull(row[2].value_or("0")),
                       row[3].value_or(""), row[4].value_or("")});
    return out;
}

StoreResult<void> log_accepted(Transaction& tx, const std::string& resource, std::uint64_t fence,
                               const std::string& value, const std::string& key) {
    auto r = tx.exec("INSERT INTO fault_accepted (resource, fence, value, key) VALUES ($1, $2, $3, $4)",
                     {resource, std::to_string(fence), value, key});
    if (!r) return std::unexpected(r.error());
    return {};
}

StoreResult<std::string> read_value(Transaction& tx, const std::string& resource) {
    auto r = tx.exec("SELECT value FROM fencelock_resources WHERE resource = $1", {resource});
    if (!r) return std::unexpected(r.error());
    return r->rows.empty() ? std::string() : r->rows[0][0].value_or("");
}

StoreResult<void> write_value(Transaction& tx, const std::string& resource, const std::string& value) {
    auto r = tx.exec("UPDATE fencelock_resources SET value = $2 WHERE resource = $1", {resource, value});
    if (!r) return std::unexpected(r.error());
    return {};
}

}  // namespace fencelock::faults
