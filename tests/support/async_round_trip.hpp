#pragma once
// The tail of an async round trip that the Sentinel and Cluster tests share: renew, then
// release, each awaited through its callback, checked with gtest.
#include <gtest/gtest.h>

#include "fencelock/async_client.hpp"

namespace fencelock::test_support {

/// Renews the lease of `owner` on `r` to `lease` and releases it, through `c`'s callbacks.
inline void renew_then_release_async(AsyncLockClient& c, const ResourceName& r, const OwnerToken& owner,
                                     milliseconds lease) {
    auto [renewed, renewal] = promised<Renewal>();
    c.renew(r, owner, lease, std::move(renewed));
    auto ren = renewal.get();
    ASSERT_TRUE(ren) << ren.error().message();
    EXPECT_EQ(ren->status, RenewStatus::renewed);
    auto [released, release] = promised<ReleaseStatus>();
    c.release(r, owner, std::move(released));
    EXPECT_EQ(release.get(), ReleaseStatus::released);
}

}  // namespace fencelock::test_support
