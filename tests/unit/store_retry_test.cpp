// The store's retry loop (src/store/retry.hpp) decides per error class, without a database:
// the attempts are scripted callables and the pause only records that it ran.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "store/retry.hpp"

namespace fencelock {
namespace {

using detail::store_error;

/// Attempts that fail with `errors` in turn, then return 42; records every call and pause.
struct Script {
    std::vector<store_errc> errors;
    std::vector<unsigned> calls{};
    std::vector<unsigned> pauses{};

    StoreResult<int> run(unsigned max_attempts) {
        return detail::perform(
            [&](unsigned n) -> StoreResult<int> {
                calls.push_back(n);
                if (calls.size() <= errors.size())
                    return std::unexpected(store_error(errors[calls.size() - 1], "attempt " + std::to_string(n)));
                return 42;
            },
            max_attempts, [&](unsigned failed) { pauses.push_back(failed); });
    }
};

TEST(StoreRetry, ASuccessAtOnceRunsOnce) {
    Script s{{}};
    auto r = s.run(5);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(*r, 42);
    EXPECT_EQ(s.calls, (std::vector<unsigned>{1}));
    EXPECT_TRUE(s.pauses.empty());
}

TEST(StoreRetry, ConflictsAreRetriedUntilTheAttemptSucceeds) {
    Script s{{store_errc::conflict, store_errc::conflict}};
    auto r = s.run(5);
    ASSERT_TRUE(r.has_value()) << r.error().detail;
    EXPECT_EQ(*r, 42);
    EXPECT_EQ(s.calls, (std::vector<unsigned>{1, 2, 3}));
    EXPECT_EQ(s.pauses, (std::vector<unsigned>{1, 2}));
}

TEST(StoreRetry, AConflictOnTheLastAttemptIsSerializationExhausted) {
    Script s{{store_errc::conflict, store_errc::conflict, store_errc::conflict, store_errc::conflict}};
    auto r = s.run(3);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code, make_error_code(store_errc::serialization_exhausted));
    EXPECT_EQ(r.error().detail, "attempt 3");  // the last attempt's words
    EXPECT_EQ(s.calls, (std::vector<unsigned>{1, 2, 3}));
    EXPECT_EQ(s.pauses, (std::vector<unsigned>{1, 2}));  // no pause after the last attempt
}

TEST(StoreRetry, OneAttemptAllowedMeansNoRetry) {
    Script s{{store_errc::conflict}};
    auto r = s.run(1);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code, make_error_code(store_errc::serialization_exhausted));
    EXPECT_EQ(s.calls.size(), 1u);
    EXPECT_TRUE(s.pauses.empty());
}

TEST(StoreRetry, ZeroAttemptsStillRunsOnce) {
    Script s{{}};
    auto r = s.run(0);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(s.calls.size(), 1u);
}

// Every error but conflict comes back as it came, after one call.
TEST(StoreRetry, OtherStoreErrorsAreReturnedAfterOneCall) {
    for (store_errc code :
         {store_errc::connection_lost, store_errc::commit_unknown, store_errc::timeout, store_errc::statement_failed,
          store_errc::transaction_broken, store_errc::invalid_input, store_errc::database_error}) {
        Script s{{code}};
        auto r = s.run(5);
        ASSERT_FALSE(r.has_value()) << to_name(make_error_code(code));
        EXPECT_EQ(r.error().code, make_error_code(code));
        EXPECT_EQ(r.error().detail, "attempt 1");
        EXPECT_EQ(s.calls.size(), 1u) << to_name(make_error_code(code));
        EXPECT_TRUE(s.pauses.empty()) << to_name(make_error_code(code));
    }
}

TEST(StoreRetry, AnErrorOfAnotherCategoryIsReturnedAfterOneCall) {
    unsigned calls = 0;
    auto r = detail::perform(
        [&](unsigned) -> StoreResult<int> {
            ++calls;
            return std::unexpected(StoreError{std::make_error_code(std::errc::io_error), "elsewhere"});
        },
        5, [](unsigned) {});
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code, std::make_error_code(std::errc::io_error));
    EXPECT_EQ(calls, 1u);
}

TEST(StoreRetry, AnExceptionPropagatesWithoutRetry) {
    unsigned calls = 0;
    unsigned pauses = 0;
    auto attempt = [&](unsigned) -> StoreResult<int> {
        ++calls;
        throw std::runtime_error("the mutation's own");
    };
    EXPECT_THROW(detail::perform(attempt, 5, [&](unsigned) { ++pauses; }), std::runtime_error);
    EXPECT_EQ(calls, 1u);
    EXPECT_EQ(pauses, 0u);
}

TEST(StoreRetry, AnExceptionAfterAConflictPropagates) {
    unsigned calls = 0;
    auto attempt = [&](unsigned n) -> StoreResult<int> {
        ++calls;
        if (n == 1) return std::unexpected(store_error(store_errc::conflict, "deadlock"));
        throw std::logic_error("second attempt");
    };
    EXPECT_THROW(detail::perform(attempt, 5, [](unsigned) {}), std::logic_error);
    EXPECT_EQ(calls, 2u);
}

}  // namespace
}  // namespace fencelock
