#pragma once
// A worker's own path to the target with a fault in it: its writes can be held on the way and
// let through later, after the lease they were sent under has expired.
//
// PostgreSQL: the worker's connection goes through a FaultProxy that holds the request bytes,
// so the write has really left the worker and waits in the network. SQLite and the file
// register have no network: a gate in front of the target holds the call instead.
#include <memory>
#include <string>

#include "faults/target.hpp"

namespace fencelock::faults {

class WriteDelay {
public:
    virtual ~WriteDelay() = default;
    /// The delayed worker's target: the same data as the test's, over its own connection.
    virtual Target& target() = 0;
    /// Writes issued from now on are held.
    virtual void hold() = 0;
    /// True once a write is being held.
    virtual bool holding() = 0;
    /// Lets held writes through, in order, and later ones pass.
    virtual void release() = 0;
    /// "proxy" or "gate", for the summary.
    virtual std::string how() const = 0;
};

/// A delayed path to the target at `location` (a FileRegister directory or a database URL).
std::unique_ptr<WriteDelay> make_write_delay(Backend backend, bool fencing, const std::string& location);

}  // namespace fencelock::faults
