// FencedStore: schema, create/read, the conditional write and the claim.
#include "fencelock/store.hpp"

#include "store/retry.hpp"
#include "store/sql.hpp"
#include "store/store_impl.hpp"

namespace fencelock {

using detail::fence_param;
using detail::Param;

std::expected<FencedStore, OptionError> FencedStore::create(StoreOptions options) {
    if (auto ok = options.validate(); !ok) return std::unexpected(ok.error());
    auto url = parse_database_url(options.url);
    return FencedStore(std::make_unique<Impl>(std::move(*url), std::move(options)));
}

FencedStore::FencedStore(std::unique_ptr<Impl> impl) noexcept : impl_(std::move(impl)) {}
FencedStore::FencedStore(FencedStore&&) noexcept = default;
FencedStore& FencedStore::operator=(FencedStore&&) noexcept = default;
FencedStore::~FencedStore() = default;

StoreBackend FencedStore::backend() const noexcept { return impl_->pool.url().backend; }
const StoreOptions& FencedStore::options() const noexcept { return impl_->pool.options(); }

StoreResult<int> FencedStore::init() {
    auto s = detail::open_session(impl_->pool.url(), impl_->pool.options(), true);
    if (!s) return std::unexpected(s.error());
    detail::Session& session = **s;
    if (session.backend() == StoreBackend::sqlite) {
        // WAL lets readers run beside the single writer; the mode is stored in the file.
        if (auto r = session.exec_script("PRAGMA journal_mode=WAL"); !r) return std::unexpected(r.error());
    }
    const auto script = session.backend() == StoreBackend::sqlite ? detail::sql::schema_sqlite
                                                                  : detail::sql::schema_postgres;
    if (auto r = session.exec_script(script); !r) {
        detail::rollback(session);
        return std::unexpected(r.error());
    }
    if (auto r = detail::check_schema(session); !r) return std::unexpected(r.error());
    return store_schema_version;
}

StoreResult<CreateStatus> FencedStore::create_resource(const ResourceName& resource, std::string_view value) {
    if (auto ok = detail::check_text({{"resource name", resource.str()}, {"value", value}}); !ok)
        return std::unexpected(ok.error());
    auto s = impl_->pool.borrow();
    if (!s) return std::unexpected(s.error());
    auto r = (*s)->exec(detail::sql::create_resource, {Param(resource.str()), Param(value)});
    if (!r) {
        if (detail::is(r.error(), store_errc::connection_lost))
            return std::unexpected(detail::store_error(store_errc::commit_unknown, r.error().detail));
        return std::unexpected(r.error());
    }
    return r->affected == 1 ? CreateStatus::created : CreateStatus::exists;
}

StoreResult<std::optional<Record>> FencedStore::read(const ResourceName& resource) {
    if (auto ok = detail::check_text("resource name", resource.str()); !ok) return std::unexpected(ok.error());
    auto s = impl_->pool.borrow();
    if (!s) return std::unexpected(s.error());
    auto r = (*s)->exec(detail::sql::read_resource, {Param(resource.str())});
    if (!r) return std::unexpected(r.error());
    if (r->rows.empty()) return std::optional<Record>{};
    auto& row = r->rows[0];
    return Record{resource.str(), row[0].value_or(""), FencingToken(detail::parse_u64(row[1])), row[2]};
}

namespace {

/// A statement that commits by itself: losing the connection means "maybe applied".
StoreError self_committed(StoreError e) {
    if (detail::is(e, store_errc::connection_lost)) e.code = store_errc::commit_unknown;
    return e;
}

const detail::Param owner_param(const std::optional<OwnerToken>& owner) {
    return owner ? Param(std::string_view(owner->str())) : Param();
}

/*
 * Why the conditional write is safe.
 *
 * The check and the change are ONE UPDATE whose WHERE clause compares last_fence: the database
 * evaluates it on the row version it is about to change, under that row's write lock
 * (PostgreSQL re-checks the condition on the newest row version after waiting for a concurrent
 * writer; SQLite has a single writer). No fence can slip in between the check and the write,
 * and last_fence only ever grows. When no row changed, a follow-up SELECT tells apart a missing
 * row (not_found) from a newer fence (stale). That SELECT runs later, but since last_fence never
 * decreases, a value >= fence it reads was also >= fence when the UPDATE ran. The only way to
 * read a smaller value is a row created in between; that attempt changed nothing and is simply
 * run again.
 *
 * With an idempotency key the key is inserted first in the same transaction. A racing worker
 * with the same key blocks on the unique index until the first commits, then finds the key
 * (duplicate) or, if the first rolled back, inserts it itself: exactly one effect per key.
 */
StoreResult<WriteResult> write_once(detail::Session& s, const ResourceName& resource, FencingToken fence,
                                    std::string_view value, const WriteOptions& o, bool enforce) {
    const std::string_view stmt = !enforce  ? detail::sql::write_unfenced
                                  : o.owner ? detail::sql::write_same_owner
                                            : detail::sql::write_strict;
    const Param params[] = {Param(resource.str()), Param(fence_param(fence)), Param(value), owner_param(o.owner)};
    const std::span<const Param> used(params, o.owner || !enforce ? 4 : 3);
    const bool txn = o.idempotency_key.has_value();
    auto fail = [&](StoreError e) -> StoreResult<WriteResult> {
        if (txn) detail::rollback(s);
        return std::unexpected(txn ? std::move(e) : self_committed(std::move(e)));
    };
    if (txn) {
        if (auto b = detail::begin(s, Isolation::read_committed); !b) return std::unexpected(b.error());
        auto ins = s.exec(detail::sql::key_insert,
                          {Param(*o.idempotency_key), Param(resource.str()), Param(fence_param(fence)), Param(value)});
        if (!ins) return fail(ins.error());
        if (ins->affected == 0) {
            auto first = detail::lookup_key(s, *o.idempotency_key);
            if (!first) return fail(first.error());
            auto cur = detail::current_fence(s, resource.str());
            if (!cur) return fail(cur.error());
            detail::rollback(s);
            if (!*first)  // the holder of the key rolled back between our insert and lookup
                return std::unexpected(detail::store_error(store_errc::conflict, "idempotency key vanished"));
            return WriteResult{WriteStatus::duplicate, cur->value_or(FencingToken(0)), std::move(*first)};
        }
    }
    auto upd = s.exec(stmt, used);
    if (!upd) return fail(upd.error());
    if (upd->affected == 1) {
        if (txn) {
            if (auto c = detail::commit(s); !c) return std::unexpected(c.error());
        }
        return WriteResult{WriteStatus::applied, fence, std::nullopt};
    }
    auto cur = detail::current_fence(s, resource.str());
    if (!cur) return fail(cur.error());
    if (txn) detail::rollback(s);
    if (!*cur) return WriteResult{WriteStatus::not_found, FencingToken(0), std::nullopt};
    if (**cur < fence)  // created after our UPDATE looked: run again
        return std::unexpected(detail::store_error(store_errc::conflict, "resource created concurrently"));
    return WriteResult{WriteStatus::stale, **cur, std::nullopt};
}

}  // namespace

StoreResult<WriteResult> FencedStore::write(const ResourceName& resource, FencingToken fence, std::string_view value,
                                            const WriteOptions& options) {
    detail::check_arguments(fence, options.idempotency_key);
    if (auto ok = detail::check_text({{"resource name", resource.str()},
                                      {"value", value},
                                      {"idempotency key", options.idempotency_key.value_or("")}});
        !ok)
        return std::unexpected(ok.error());
    auto s = impl_->pool.borrow();
    if (!s) return std::unexpected(s.error());
    auto r = detail::perform(impl_->pool.options(), [&](unsigned) {
        return write_once(**s, resource, fence, value, options, impl_->pool.options().enforce_fencing);
    });
    if (r && r->status == WriteStatus::stale)
        detail::report_rejection(impl_->pool.options(), StoreOperation::write, resource.str(), fence, r->last_fence);
    return r;
}

/*
 * Why the claim protects a read-think-write cycle: the UPDATE raises last_fence to the
 * claimer's fence in the same statement that returns the value, so from the moment the value
 * is read every holder with an older fence is stale, and the claimer's own later write (same
 * fence, same owner, through the same-owner rule) is the only one that can follow it.
 */
StoreResult<ClaimResult> FencedStore::claim(const ResourceName& resource, FencingToken fence, const OwnerToken& owner) {
    detail::check_arguments(fence, std::nullopt);
    if (auto ok = detail::check_text("resource name", resource.str()); !ok) return std::unexpected(ok.error());
    auto s = impl_->pool.borrow();
    if (!s) return std::unexpected(s.error());
    auto result = detail::perform(impl_->pool.options(), [&](unsigned) -> StoreResult<ClaimResult> {
        const auto stmt = impl_->pool.options().enforce_fencing ? detail::sql::claim : detail::sql::claim_unfenced;
        auto r =
            (*s)->exec(stmt, {Param(resource.str()), Param(fence_param(fence)), Param(std::string_view(owner.str()))});
        if (!r) return std::unexpected(self_committed(r.error()));
        if (!r->rows.empty()) return ClaimResult{ClaimStatus::claimed, r->rows[0][0].value_or(""), fence};
        auto cur = (*s)->exec(detail::sql::read_resource, {Param(resource.str())});
        if (!cur) return std::unexpected(cur.error());
        if (cur->rows.empty()) return ClaimResult{ClaimStatus::not_found, "", FencingToken(0)};
        const FencingToken last(detail::parse_u64(cur->rows[0][1]));
        if (last < fence)
            return std::unexpected(detail::store_error(store_errc::conflict, "resource created concurrently"));
        return ClaimResult{ClaimStatus::stale, cur->rows[0][0].value_or(""), last};
    });
    if (result && result->status == ClaimStatus::stale)
        detail::report_rejection(impl_->pool.options(), StoreOperation::claim, resource.str(), fence,
                                 result->last_fence);
    return result;
}

std::string_view to_string(WriteStatus s) noexcept {
    switch (s) {
        case WriteStatus::applied: return "applied";
        case WriteStatus::stale: return "stale";
        case WriteStatus::not_found: return "not_found";
        case WriteStatus::duplicate: return "duplicate";
    }
    return "unknown";
}

std::string_view to_string(CreateStatus s) noexcept { return s == CreateStatus::created ? "created" : "exists"; }

std::string_view to_string(ClaimStatus s) noexcept {
    switch (s) {
        case ClaimStatus::claimed: return "claimed";
        case ClaimStatus::stale: return "stale";
        case ClaimStatus::not_found: return "not_found";
    }
    return "unknown";
}

std::string_view to_string(TransactStatus s) noexcept {
    switch (s) {
        case TransactStatus::committed: return "committed";
        case TransactStatus::stale: return "stale";
        case TransactStatus::not_found: return "not_found";
        case TransactStatus::duplicate: return "duplicate";
        case TransactStatus::aborted: return "aborted";
    }
    return "unknown";
}

}  // namespace fencelock
