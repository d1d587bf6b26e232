#pragma once
// A narrow gate into LockClient for the drivers built on one (in the manner of libpqxx's
// callgates): LockAdmin gets the client's coordinator, AsyncLockClient the shared client state
// (client_core.hpp), and neither sees LockClient's own implementation.
#include <memory>

#include "coordinator/coordinator.hpp"
#include "fencelock/client.hpp"

namespace fencelock::detail {

struct ClientCore;

class ClientGate {
public:
    /// `client`'s coordinator, shared: it outlives the client while the caller holds it.
    static std::shared_ptr<Coordinator> coordinator(const LockClient& client);
    /// `client`'s shared state, for a driver that lives no longer than `client`.
    static ClientCore& core(LockClient& client);
};

}  // namespace fencelock::detail
