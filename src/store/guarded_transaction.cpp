// The guarded transaction and its Transaction handle.
#include "fencelock/store.hpp"

#include "store/sql.hpp"
#include "store/sql_scan.hpp"
#include "store/store_impl.hpp"

namespace fencelock {

using detail::Param;
using detail::fence_param;

StoreResult<Rows> Transaction::run(std::string_view sql, std::span<const std::optional<std::string>> params) {
    if (poisoned_) return std::unexpected(*poisoned_);
    auto checked = detail::check_text("statement", sql);
    for (std::size_t i = 0; checked && i < params.size(); ++i)
        if (params[i]) checked = detail::check_text("parameter $" + std::to_string(i + 1), *params[i]);
    if (!checked) return refuse(checked.error());
    // The guard's row lock lasts only as long as the transaction: a statement that ends it
    // would let everything after it, the fence raise included, run unguarded.
    if (detail::controls_transaction(sql))
        return refuse(detail::store_error(store_errc::transaction_broken,
                                          "a mutation may not end or restart the guarded transaction "
                                          "(BEGIN, COMMIT, ROLLBACK, END, ABORT, PREPARE TRANSACTION); nothing ran"));
    std::vector<Param> bound;
    bound.reserve(params.size());
    for (const auto& p : params) bound.push_back(p ? Param(std::string_view(*p)) : Param());
    auto r = session_.exec(sql, bound);
    if (!r) return refuse(r.error());
    // Whatever got past the keyword check (a function that commits, ...) is caught here,
    // before the mutation's next statement.
    if (session_.transaction_state() != detail::Session::TxState::open)
        return refuse(detail::store_error(store_errc::transaction_broken,
                                          "the statement ended the guarded transaction; rolled back what was "
                                          "still open, and what it committed is not guarded"));
    return r;
}

std::unexpected<StoreError> Transaction::refuse(StoreError e) {
    poisoned_ = e;
    return std::unexpected(std::move(e));
}

StoreResult<Rows> Transaction::exec(std::string_view sql, std::span<const std::optional<std::string>> params) {
    return run(sql, params);
}

StoreResult<Rows> Transaction::exec(std::string_view sql, std::initializer_list<std::optional<std::string>> params) {
    return run(sql, std::span<const std::optional<std::string>>(params.begin(), params.size()));
}

StoreResult<void> Transaction::set_value(std::string_view value) {
    if (auto ok = detail::check_text("value", value); !ok) return refuse(ok.error());
    auto r = exec(detail::sql::set_value, {{resource_}, {std::string(value)}});
    if (!r) return std::unexpected(r.error());
    value_ = value;
    return {};
}

StoreResult<std::string> Transaction::publish(std::string_view stream, std::string_view payload) {
    if (auto ok = detail::check_text({{"outbox stream", stream}, {"outbox payload", payload}}); !ok)
        return refuse(ok.error());
    std::string id = detail::random_id();
    auto r = exec(detail::sql::publish, {{id}, {resource_}, {std::to_string(fence_.value())}, {std::string(stream)},
                                        {std::string(payload)}});
    if (!r) return std::unexpected(r.error());
    return id;
}

namespace detail {

/*
 * Why the guarded transaction is safe.
 *
 * PostgreSQL: `SELECT ... FOR UPDATE` takes the guard row's lock before the fence is compared,
 * and the lock is held until COMMIT or ROLLBACK. Every other transact(), write() or claim() on
 * the same resource updates that row and so waits for us; it then sees our raised last_fence
 * (FOR UPDATE and UPDATE read the newest committed row version even in READ COMMITTED). So the
 * check, the caller's mutations and the fence update form one critical section ordered by
 * fence. SQLite: BEGIN IMMEDIATE takes the database write lock before anything is read, which
 * serializes all writers outright.
 *
 * Everything - key, mutations, outbox events, fence - is in one transaction: a failure at any
 * point before COMMIT rolls it all back, and a failed attempt (deadlock, serialization
 * failure) can be run again without doubling anything. Only a COMMIT whose reply is lost is
 * ambiguous; it is reported as commit_unknown, never as failed.
 */
struct TransactAttempt {
    detail::Session& s;
    const StoreOptions& options;
    const ResourceName& resource;
    FencingToken fence;
    const TransactOptions& o;
    const Mutation& mutation;

    StoreResult<TransactResult> fail(StoreError e) {
        detail::rollback(s);
        return std::unexpected(std::move(e));
    }
    TransactResult done(TransactStatus status, FencingToken last) {
        detail::rollback(s);
        return TransactResult{status, last, std::nullopt, std::nullopt, 0};
    }

    StoreResult<TransactResult> run() {
        const std::string& r = resource.str();
        if (auto b = detail::begin(s, options.isolation); !b) return std::unexpected(b.error());
        if (o.idempotency_key) {
            auto ins = s.exec(detail::sql::key_insert,
                              {Param(*o.idempotency_key), Param(r), Param(fence_param(fence)), Param("")});
            if (!ins) return fail(ins.error());
            if (ins->affected == 0) {
                auto first = detail::lookup_key(s, *o.idempotency_key);
                if (!first) return fail(first.error());
                auto cur = detail::current_fence(s, r);
                if (!cur) return fail(cur.error());
                if (!*first) return fail(detail::store_error(store_errc::conflict, "idempotency key vanished"));
                auto result = done(TransactStatus::duplicate, cur->value_or(FencingToken(0)));
                result.first = std::move(*first);
                return result;
            }
        }
        const auto guard_sql = s.backend() == StoreBackend::postgresql ? detail::sql::guard_postgres
                                                                        : detail::sql::guard_sqlite;
        auto guard = s.exec(guard_sql, {Param(r)});
        if (!guard) return fail(guard.error());
        if (guard->rows.empty()) return done(TransactStatus::not_found, FencingToken(0));
        const auto& row = guard->rows[0];
        const FencingToken last(detail::parse_u64(row[0]));
        const bool same_owner = o.owner && last == fence && row[1] && *row[1] == o.owner->str();
        if (options.enforce_fencing && !(last < fence || same_owner)) return done(TransactStatus::stale, last);

        Transaction tx(s, r, fence, row[2].value_or(""), s.backend());
        std::expected<void, StoreError> m;
        try {
            m = mutation(tx);
        } catch (...) {
            detail::rollback(s);
            throw;
        }
        // A failed statement poisons the transaction even when the mutation ignores it.
        if (tx.poisoned_) return fail(*tx.poisoned_);
        if (!m) {
            if (m.error().code.category() == store_error_category()) return fail(m.error());
            auto result = done(TransactStatus::aborted, last);
            result.cause = m.error();
            return result;
        }
        if (auto text = detail::check_text("outcome", tx.outcome_); !text) return fail(text.error());
        if (auto open = still_open("raising the fence"); !open) return fail(open.error());
        if (auto up = raise(r); !up) return fail(up.error());
        if (o.idempotency_key) {
            if (auto k = s.exec(detail::sql::key_outcome, {Param(*o.idempotency_key), Param(tx.outcome_)}); !k)
                return fail(k.error());
        }
        if (auto open = still_open("COMMIT"); !open) return fail(open.error());
        if (auto c = detail::commit(s); !c) return std::unexpected(c.error());
        return TransactResult{TransactStatus::committed, fence, std::nullopt, std::nullopt, 0};
    }

    /// The guarded transaction must still be open: a mutation that ran COMMIT or ROLLBACK has
    /// given up the row lock, and what follows would run in autocommit, unguarded.
    StoreResult<void> still_open(std::string_view before) {
        using State = detail::Session::TxState;
        switch (s.transaction_state()) {
            case State::open: return {};
            case State::idle:
                return std::unexpected(detail::store_error(
                    store_errc::transaction_broken,
                    "the mutation ended the transaction (COMMIT or ROLLBACK) before " + std::string(before) +
                        ": the fence was not raised and transact() committed nothing; what the mutation committed "
                        "itself is not guarded"));
            case State::failed:
                return std::unexpected(detail::store_error(
                    store_errc::transaction_broken, "the transaction failed inside the mutation before " +
                                                        std::string(before) + "; rolled back"));
            case State::broken: break;
        }
        return std::unexpected(detail::store_error(store_errc::connection_lost,
                                                   "connection lost before " + std::string(before)));
    }

    /// Raises last_fence with the same condition the guard checked; exactly one row must change
    /// (none: the mutation changed or deleted the guard row, or the lock was lost in between).
    StoreResult<void> raise(const std::string& r) {
        const Param owner = o.owner ? Param(std::string_view(o.owner->str())) : Param();
        const Param all[] = {Param(r), Param(fence_param(fence)), owner};
        const bool strict = options.enforce_fencing && !o.owner;
        const std::string_view stmt = !options.enforce_fencing ? detail::sql::raise_fence_unfenced
                                      : strict                 ? detail::sql::raise_fence_strict
                                                               : detail::sql::raise_fence_same_owner;
        auto up = s.exec(stmt, std::span<const Param>(all, strict ? 2 : 3));
        if (!up) return std::unexpected(up.error());
        if (up->affected != 1)
            return std::unexpected(detail::store_error(
                store_errc::transaction_broken,
                "the guard row changed under the mutation (updated, deleted, or its lock lost): the fence "
                "cannot be raised; rolled back"));
        return {};
    }
};

}  // namespace detail

StoreResult<TransactResult> FencedStore::transact(const ResourceName& resource, FencingToken fence,
                                                  const TransactOptions& options, const Mutation& mutation) {
    detail::check_arguments(fence, options.idempotency_key);
    if (auto ok = detail::check_text(
            {{"resource name", resource.str()}, {"idempotency key", options.idempotency_key.value_or("")}});
        !ok)
        return std::unexpected(ok.error());
    auto s = impl_->pool.borrow();
    if (!s) return std::unexpected(s.error());
    const StoreOptions& so = impl_->pool.options();
    for (unsigned n = 1;; ++n) {
        auto r = detail::TransactAttempt{**s, so, resource, fence, options, mutation}.run();
        if (r) {
            r->attempts = n;
            if (r->status == TransactStatus::stale)
                detail::report_rejection(so, StoreOperation::transact, resource.str(), fence, r->last_fence);
            return r;
        }
        if (!detail::is(r.error(), store_errc::conflict)) return r;
        if (n >= so.max_attempts)
            return std::unexpected(detail::store_error(store_errc::serialization_exhausted, r.error().detail));
        detail::backoff_sleep(so, n - 1);
    }
}

}  // namespace fencelock
