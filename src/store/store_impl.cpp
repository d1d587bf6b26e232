// The helpers store_impl.hpp declares: transaction control, row reads, argument checks, backoff.
#include <charconv>
#include <limits>
#include <random>
#include <stdexcept>
#include <thread>

#include "common/backoff_delays.hpp"
#include "store/sql.hpp"
#include "store/store_impl.hpp"

namespace fencelock::detail {

std::string_view begin_statement(StoreBackend backend, Isolation isolation) noexcept {
    if (backend == StoreBackend::postgresql) {
        switch (isolation) {
            case Isolation::read_committed: return "BEGIN ISOLATION LEVEL READ COMMITTED";
            case Isolation::repeatable_read: return "BEGIN ISOLATION LEVEL REPEATABLE READ";
            case Isolation::serializable: return "BEGIN ISOLATION LEVEL SERIALIZABLE";
        }
    }
    return sql::begin_sqlite;
}

StoreResult<void> begin(Session& s, Isolation isolation) {
    auto r = s.exec(begin_statement(s.backend(), isolation), std::span<const Param>{});
    if (!r) return std::unexpected(r.error());
    return {};
}

void rollback(Session& s) noexcept {
    try {
        (void)s.exec("ROLLBACK", std::span<const Param>{});
    } catch (...) {  // allocation failure: the pool drops a session left in a transaction
    }
}

StoreResult<void> commit(Session& s) {
    auto r = s.exec(sql::commit, std::span<const Param>{});
    if (r) return {};
    return std::unexpected(failed_commit(s, std::move(r.error())));
}

StoreError failed_commit(Session& s, StoreError e) {
    if (is(e, store_errc::connection_lost)) return store_error(store_errc::commit_unknown, std::move(e.detail));
    // SQLite keeps the transaction open after a failed COMMIT (e.g. busy): end it.
    rollback(s);
    return e;
}

std::uint64_t parse_u64(const std::optional<std::string>& text) {
    std::uint64_t v = 0;
    if (text) std::from_chars(text->data(), text->data() + text->size(), v);
    return v;
}

StoreResult<std::optional<Completion>> lookup_key(Session& s, std::string_view key) {
    auto r = s.exec(sql::key_lookup, {Param(key)});
    if (!r) return std::unexpected(r.error());
    if (r->rows.empty()) return std::optional<Completion>{};
    auto& row = r->rows[0];
    return Completion{std::string(key), row[0].value_or(""), FencingToken(parse_u64(row[1])), row[2].value_or("")};
}

StoreResult<std::optional<FencingToken>> current_fence(Session& s, std::string_view resource) {
    auto r = s.exec(sql::read_fence, {Param(resource)});
    if (!r) return std::unexpected(r.error());
    if (r->rows.empty()) return std::optional<FencingToken>{};
    return FencingToken(parse_u64(r->rows[0][0]));
}

void check_arguments(FencingToken fence, const std::optional<std::string>& key) {
    // No lease carries a fence above max_fence; accepting one would leave the row refusing
    // every real fence from then on.
    if (fence.value() > max_fence)
        throw std::invalid_argument("fencing token " + std::to_string(fence.value()) + " is above " +
                                    std::to_string(max_fence) + " (2^53 - 1), the largest fencelock issues");
    if (key && (key->empty() || key->size() > 256)) throw std::invalid_argument("idempotency key must be 1..256 bytes");
}

void report_rejection(const StoreOptions& options, StoreOperation operation, const std::string& resource,
                      FencingToken fence, FencingToken last_fence) noexcept {
    if (options.observer)
        options.observer->on_fence_rejected(FenceRejectedEvent{resource, fence, last_fence, operation});
}

void backoff_sleep(const StoreOptions& options, unsigned attempt) {
    thread_local std::mt19937_64 rng{std::random_device{}()};
    std::this_thread::sleep_for(full_jitter(options.retry_backoff, attempt, rng));
}

}  // namespace fencelock::detail
