#pragma once
// Where the holders of the failover scenario get their leases and fences: from one server at
// a time, named by port, because the scenario itself points each holder at the master of the
// moment (the old master before the failover, the promoted replica after it, the old master
// again once it restarts empty).
//
// fencelock_fences() is LockClient, the product under test. naive_fences() is the negative
// control: the lock a plain Redis recipe builds, `SET lock NX PX` plus `INCR counter` as the
// fence, whose counter goes back with the writes a failover loses.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "fencelock/client.hpp"

namespace fencelock::faults {

class FenceSource {
public:
    virtual ~FenceSource() = default;
    /// One attempt on the server at 127.0.0.1:`port`. Errors are fencelock's error codes, so
    /// record_acquire() classifies both sources alike.
    virtual Result<Acquisition> try_acquire(std::uint16_t port, const std::string& resource,
                                            std::chrono::milliseconds lease) = 0;
    /// Best effort: frees the lock if `lease` still holds it there.
    virtual void release(std::uint16_t port, const Lease& lease) = 0;
    /// What the source is, for the summary line.
    virtual std::string_view describe() const = 0;
};

std::unique_ptr<FenceSource> fencelock_fences();
std::unique_ptr<FenceSource> naive_fences();

}  // namespace fencelock::faults
