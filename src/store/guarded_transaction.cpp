// The guarded transaction and its Transaction handle.
#include "fencelock/store.hpp"

#include "store/retry.hpp"
#include "store/sql.hpp"
#include "store/sql_scan.hpp"
#include "store/store_impl.hpp"

namespace fencelock {

using detail::fence_param;
using detail::Param;

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
    auto r = exec(detail::sql::publish,
                  {{id}, {resource_}, {std::to_string(fence_.value())}, {std::string(stream)}, {std::string(payload)}});
    if (!r) return std::unexpected(r.error());
    return id;
}

namespace detail {

/*
 * Why the guarded transaction is safe.
 *
 * The guard is one UPDATE, the first statement after BEGIN: it raises last_fence to our fence
 * only where the fence check holds (`last_fence < $fence`, or the same-owner rule) and returns
 * the value. The database evaluates that condition on the newest row version under the row's
 * write lock (PostgreSQL re-checks it after waiting for a concurrent writer, even in READ
 * COMMITTED; SQLite's BEGIN IMMEDIATE has taken the database write lock before anything is
 * read). The lock is held until COMMIT or ROLLBACK, so every other transact(), write() or
 * claim() on the resource waits for us and then sees our raised fence, or, after a rollback,
 * the old one: a rollback undoes the raise. That is what `SELECT ... FOR UPDATE` followed by a
 * fence UPDATE before COMMIT gave, with one statement and one round trip fewer, and nobody can
 * tell the raise came first: no other transaction sees the row before we end.
 *
 * Zero rows: a read of last_fence in the same transaction tells stale from not found. Fences
 * never decrease, so a value >= ours was already there when the guard looked; a smaller one
 * means the row was created after the guard looked (PostgreSQL), and the attempt is run again.
 *
 * The mutation runs under the lock. It must leave the guard row with our fence: guard_intact,
 * sent with the COMMIT, fails the transaction when the row was deleted or its fence changed.
 *
 * On PostgreSQL the opening (BEGIN, the idempotency key, the guard) and the closing (the key's
 * outcome, guard_intact, COMMIT) each go in one round trip (Session::exec_batch): a failed
 * statement stops the rest of its batch, so a COMMIT never runs behind a failed check.
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
        const Param owner = o.owner ? Param(std::string_view(o.owner->str())) : Param();
        const std::string key = o.idempotency_key.value_or("");  // Param views it: it must outlive the batch
        const Param key_params[] = {Param(key), Param(r), Param(fence_param(fence)), Param("")};
        const Param guard_params[] = {Param(r), Param(fence_param(fence)), owner};
        const bool strict = options.enforce_fencing && !o.owner;
        const std::string_view guard_sql = !options.enforce_fencing ? detail::sql::guard_unfenced
                                           : strict                 ? detail::sql::guard_strict
                                                                    : detail::sql::guard_same_owner;
        std::vector<detail::Statement> opening{{detail::begin_statement(s.backend(), options.isolation), {}}};
        if (o.idempotency_key) opening.push_back({detail::sql::key_insert, key_params});
        opening.push_back({guard_sql, std::span<const Param>(guard_params, strict ? 2 : 3)});
        auto opened = s.exec_batch(opening);
        if (opened.error && opened.rows.empty()) return std::unexpected(std::move(*opened.error));  // BEGIN
        if (opened.error) return fail(std::move(*opened.error));
        if (o.idempotency_key && opened.rows[1].affected == 0) return duplicate(r);
        const Rows& guard = opened.rows.back();
        if (guard.rows.empty()) return refused(r);

        Transaction tx(s, r, fence, guard.rows[0][0].value_or(""), s.backend());
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
            auto result = done(TransactStatus::aborted, FencingToken(0));
            result.cause = m.error();
            return result;
        }
        if (auto text = detail::check_text("outcome", tx.outcome_); !text) return fail(text.error());
        if (auto open = still_open(); !open) return fail(open.error());
        return close(r, tx.outcome_);
    }

    /// The key's outcome, the guard-row check and COMMIT, in one batch.
    StoreResult<TransactResult> close(const std::string& r, const std::string& outcome) {
        const std::string key = o.idempotency_key.value_or("");
        const Param outcome_params[] = {Param(key), Param(outcome)};
        const Param intact_params[] = {Param(r), Param(fence_param(fence))};
        std::vector<detail::Statement> closing;
        if (o.idempotency_key) closing.push_back({detail::sql::key_outcome, outcome_params});
        closing.push_back({detail::sql::guard_intact, intact_params});
        closing.push_back({detail::sql::commit, {}});
        auto closed = s.exec_batch(closing);
        if (!closed.error) return TransactResult{TransactStatus::committed, fence, std::nullopt, std::nullopt, 0};
        StoreError e = std::move(*closed.error);
        // The COMMIT was sent with the batch: a connection lost anywhere in it may have committed.
        if (closed.rows.size() + 1 == closing.size() || detail::is(e, store_errc::connection_lost))
            return std::unexpected(detail::failed_commit(s, std::move(e)));
        if (closed.rows.size() + 2 == closing.size() && detail::is(e, store_errc::statement_failed))
            return fail(detail::store_error(store_errc::transaction_broken,
                                            "the mutation deleted the guard row or changed its fence: "
                                            "rolled back, nothing committed"));
        return fail(std::move(e));
    }

    /// Zero rows from the guard: stale, or no such resource.
    StoreResult<TransactResult> refused(const std::string& r) {
        auto cur = detail::current_fence(s, r);
        if (!cur) return fail(cur.error());
        if (!*cur) return done(TransactStatus::not_found, FencingToken(0));
        // The guard refused a row that exists now: it was created after the guard's snapshot
        // (fenced: our fence is above the row's; unfenced: the guard refuses no existing row).
        // A conflict, so the attempt is retried, not a stale write.
        if (**cur < fence || !options.enforce_fencing)
            return fail(detail::store_error(store_errc::conflict, "resource created concurrently"));
        return done(TransactStatus::stale, **cur);
    }

    /// The key was there: the first completion, read after rolling back (our guard raised the
    /// fence inside this transaction; the fence reported is the committed one).
    StoreResult<TransactResult> duplicate(const std::string& r) {
        detail::rollback(s);
        auto first = detail::lookup_key(s, *o.idempotency_key);
        if (!first) return std::unexpected(first.error());
        auto cur = detail::current_fence(s, r);
        if (!cur) return std::unexpected(cur.error());
        if (!*first) return std::unexpected(detail::store_error(store_errc::conflict, "idempotency key vanished"));
        TransactResult result{TransactStatus::duplicate, cur->value_or(FencingToken(0)), std::nullopt, std::nullopt, 0};
        result.first = std::move(*first);
        return result;
    }

    /// The guarded transaction must still be open: a mutation that ran COMMIT or ROLLBACK has
    /// given up the row lock, and what follows would run in autocommit, unguarded.
    StoreResult<void> still_open() {
        using State = detail::Session::TxState;
        switch (s.transaction_state()) {
            case State::open: return {};
            case State::idle:
                return std::unexpected(detail::store_error(
                    store_errc::transaction_broken,
                    "the mutation ended the transaction (COMMIT or ROLLBACK): transact() committed nothing; "
                    "what the mutation committed itself is not transact()'s"));
            case State::failed:
                return std::unexpected(detail::store_error(store_errc::transaction_broken,
                                                           "the transaction failed inside the mutation; rolled back"));
            case State::broken: break;
        }
        return std::unexpected(detail::store_error(store_errc::connection_lost, "connection lost before COMMIT"));
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
    auto r = detail::perform(so, [&](unsigned n) {
        auto attempt = detail::TransactAttempt{**s, so, resource, fence, options, mutation}.run();
        if (attempt) attempt->attempts = n;
        return attempt;
    });
    if (r && r->status == TransactStatus::stale)
        detail::report_rejection(so, StoreOperation::transact, resource.str(), fence, r->last_fence);
    return r;
}

}  // namespace fencelock
