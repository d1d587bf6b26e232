#pragma once
/// Hooks the fenced store calls on its events, so metrics and logs can be attached without the
/// store depending on a metrics library (like LockObserver). Set StoreOptions::observer.
///
/// The store calls them from the thread that called write(), claim() or transact(), after the
/// outcome is known: a hook costs no round trip. Implementations must be thread-safe, fast and
/// must not throw.

#include <string_view>

#include "fencelock/types.hpp"

namespace fencelock {

/// Which call the store refused.
enum class StoreOperation { write, claim, transact };

inline std::string_view to_string(StoreOperation op) noexcept {
    switch (op) {
        case StoreOperation::write: return "write";
        case StoreOperation::claim: return "claim";
        case StoreOperation::transact: return "transact";
    }
    return "write";
}

/// A write, claim or transaction refused as stale: the resource already holds `last_fence`,
/// which is not older than `fence` (or equal but recorded by another owner). Nothing changed.
struct FenceRejectedEvent {
    std::string_view resource;
    FencingToken fence;
    FencingToken last_fence;
    StoreOperation operation;
};

class StoreObserver {
public:
    virtual ~StoreObserver() = default;
    virtual void on_fence_rejected(const FenceRejectedEvent&) noexcept {}
};

}  // namespace fencelock
