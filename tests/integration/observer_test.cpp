// The observer hooks see every lock event with the right outcome, in a scripted scenario whose
// counts are known in advance.
#include <map>
#include <mutex>

#include "integration/lock_fixture.hpp"

namespace fencelock::test_support {
namespace {

using namespace std::chrono_literals;

class CountingObserver final : public LockObserver {
public:
    void on_acquire(const AcquireEvent& e) noexcept override { add("acquire:" + std::string(to_string(e.result))); }
    void on_renew(const RenewEvent& e) noexcept override {
        add(std::string(e.kept ? "kept_renew:" : "renew:") + std::string(result_label(e.result)));
    }
    void on_release(const ReleaseEvent& e) noexcept override {
        add("release:" + std::string(result_label(e.result)) + (e.held_for ? ":timed" : ""));
    }
    void on_lease_lost(const LossEvent& e) noexcept override { add("lost:" + std::string(to_string(e.reason))); }

    int count(const std::string& key) {
        std::lock_guard lock(m_);
        return counts_[key];
    }

private:
    void add(const std::string& key) {
        std::lock_guard lock(m_);
        ++counts_[key];
    }
    std::mutex m_;
    std::map<std::string, int> counts_;
};

TEST_F(LockTest, ObserverSeesEveryOutcome) {
    auto observer = std::make_shared<CountingObserver>();
    ClientOptions options;
    options.observer = observer;
    auto c = client(options);
    const auto r = resource("observed");

    auto a = c.try_acquire(r, {.lease = 10s});  // acquired
    ASSERT_TRUE(a && a->acquired());
    ASSERT_TRUE(c.try_acquire(r, {.lease = 10s}));                                                   // contended
    ASSERT_TRUE(c.acquire(r, {.lease = 10s, .wait = 30ms, .backoff = {.base = 5ms, .max = 10ms}}));  // timeout
    ASSERT_TRUE(c.renew(r, a->lease->owner, 10s));                                                   // renewed
    ASSERT_TRUE(c.renew(r, OwnerToken::generate(), 10s));                                            // not_owner
    ASSERT_TRUE(c.release(r, OwnerToken::generate()));                                               // not_owner
    ASSERT_TRUE(c.release(r, a->lease->owner));                                                      // released

    {
        auto held = c.hold(r, {.lease = 60ms});  // acquired
        ASSERT_TRUE(held && held->acquired());
        ASSERT_TRUE(eventually([&] { return held->lease->renewals() >= 1; }));  // kept renewals
        redis->cli({"DEL", "lock:{observed}"});
        ASSERT_TRUE(eventually([&] { return held->lease->loss().has_value(); }));  // lost: not_owner
    }                                                                              // release: not_held, timed

    EXPECT_EQ(observer->count("acquire:acquired"), 2);
    EXPECT_EQ(observer->count("acquire:contended"), 1);
    EXPECT_EQ(observer->count("acquire:timeout"), 1);
    EXPECT_EQ(observer->count("renew:renewed"), 1);
    EXPECT_EQ(observer->count("renew:not_owner"), 1);
    EXPECT_EQ(observer->count("release:not_owner"), 1);
    EXPECT_EQ(observer->count("release:released"), 1);
    EXPECT_GE(observer->count("kept_renew:renewed"), 1);
    EXPECT_EQ(observer->count("kept_renew:not_owner"), 1);
    EXPECT_EQ(observer->count("lost:not_owner"), 1);
    EXPECT_EQ(observer->count("release:not_held:timed"), 1) << "the lock was deleted: nobody holds it";

    redis->kill();
    EXPECT_FALSE(c.try_acquire(r, {.lease = 10s}));  // error
    EXPECT_EQ(observer->count("acquire:error"), 1);
}

}  // namespace
}  // namespace fencelock::test_support
