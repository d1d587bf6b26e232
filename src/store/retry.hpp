#pragma once
// The store's one retry loop, after libpqxx's pqxx::perform() (include/pqxx/transactor.hxx):
// an attempt runs again only after an error that proves it changed nothing and may succeed next
// time; every other outcome goes back to the caller as it came. write(), claim() and transact()
// all retry through it.
#include <expected>
#include <type_traits>

#include "fencelock/store.hpp"
#include "store/session.hpp"
#include "store/store_impl.hpp"

namespace fencelock::detail {

/// Runs `attempt(n)` for n = 1, 2, ... and returns the first outcome that is not a `conflict`,
/// at most `max_attempts` times (at least once). `pause(n)` runs between attempt n and n + 1.
/// A `conflict` on the last attempt becomes `serialization_exhausted`, with the last detail.
/// `attempt` returns a StoreResult; `pause` takes the number of the attempt that failed.
template <typename Attempt, typename Pause>
auto perform(Attempt&& attempt, unsigned max_attempts, Pause&& pause) -> std::invoke_result_t<Attempt&, unsigned> {
    for (unsigned n = 1;; ++n) {
        // An exception from the attempt (a mutation's own) propagates at once: it is not the
        // database's answer, and the attempt rolled back before rethrowing it.
        auto r = attempt(n);
        // A value, including the expected refusals (stale, not_found, duplicate, aborted): done.
        if (r) return r;
        const StoreError& e = r.error();
        if (is(e, store_errc::conflict)) {
            // Serialization failure, deadlock, stale SQLite snapshot or a row created under us:
            // the database rolled the attempt back, so running it again cannot apply anything twice.
            if (n >= max_attempts) return std::unexpected(store_error(store_errc::serialization_exhausted, e.detail));
            pause(n);
            continue;
        }
        if (is(e, store_errc::commit_unknown)) {
            // The change may be durable (libpqxx's in_doubt_error): running it again could apply it twice.
            return r;
        }
        if (is(e, store_errc::connection_lost)) {
            // Rolled back, but on the one session this call borrowed, which is now broken: the caller
            // retries (the error is classified retryable) and its next call borrows a fresh session.
            return r;
        }
        // Everything else is not rerun: a timeout has already spent the caller's statement_timeout,
        // and a rejected statement, wrong schema, bad input or broken mutation would fail again.
        return r;
    }
}

/// perform() with the options' max_attempts and full-jitter retry_backoff between attempts.
template <typename Attempt>
auto perform(const StoreOptions& options, Attempt&& attempt) -> std::invoke_result_t<Attempt&, unsigned> {
    return perform(attempt, options.max_attempts, [&](unsigned failed) { backoff_sleep(options, failed - 1); });
}

}  // namespace fencelock::detail
