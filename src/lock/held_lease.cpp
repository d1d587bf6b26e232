#include <chrono>

#include "common/log.hpp"
#include "lock/renewal_keeper.hpp"

namespace fencelock {

using detail::KeptLease;
using State = KeptLease::State;

std::string_view to_string(LossReason reason) noexcept {
    switch (reason) {
        case LossReason::not_owner: return "not_owner";
        case LossReason::max_hold_exceeded: return "max_hold_exceeded";
        case LossReason::expired: return "expired";
        case LossReason::clock_step: return "clock_step";
    }
    return "unknown";
}

std::expected<void, OptionError> KeepOptions::validate(milliseconds lease, double clock_drift_factor) const {
    const auto trusted = std::chrono::duration_cast<milliseconds>(lease * (1.0 - clock_drift_factor));
    if (renew_every < milliseconds::zero()) return std::unexpected(OptionError{"renew_every", "must not be negative"});
    if (renew_every >= trusted)
        return std::unexpected(OptionError{"renew_every", "must be shorter than the lease minus the drift margin"});
    if (retry_delay <= milliseconds::zero()) return std::unexpected(OptionError{"retry_delay", "must be positive"});
    return {};
}

HeldLease::HeldLease(std::shared_ptr<KeptLease> state, std::shared_ptr<detail::Keeper> keeper) noexcept
    : state_(std::move(state)), keeper_(std::move(keeper)) {}

HeldLease::HeldLease(HeldLease&&) noexcept = default;

HeldLease& HeldLease::operator=(HeldLease&& other) noexcept {
    if (this != &other) {
        HeldLease previous(std::move(*this));  // releases the lease this handle held
        state_ = std::move(other.state_);
        keeper_ = std::move(other.keeper_);
    }
    return *this;
}

// Best effort: a lease that is still ours is released so others need not wait for its TTL.
// Never throws; a failure is logged and reported to on_release_error, never swallowed.
HeldLease::~HeldLease() {
    if (!state_ || state_->released) return;
    const bool was_lost = state_->state == State::lost;
    auto result = release();
    std::error_code problem;
    if (!result) problem = result.error();
    else if (*result != ReleaseStatus::released && !was_lost) problem = make_error_code(errc::protocol_error);
    if (!problem) return;
    detail::log_event("warn", "lease_release_failed",
                      {{"resource", state_->resource.str()},
                       {"owner", state_->owner.str()},
                       {"fence", state_->fence.load()},
                       {"error", result ? std::string(to_string(*result)) : problem.message()}});
    if (state_->keep.on_release_error) {
        try {
            state_->keep.on_release_error(state_->resource, problem);
        } catch (...) {
            detail::log_event("error", "on_release_error_threw", {{"resource", state_->resource.str()}});
        }
    }
}

const ResourceName& HeldLease::resource() const noexcept { return state_->resource; }
const OwnerToken& HeldLease::owner() const noexcept { return state_->owner; }
FencingToken HeldLease::fence() const noexcept { return FencingToken(state_->fence.load()); }
std::stop_token HeldLease::stop_token() const noexcept { return state_->stop.get_token(); }
steady_time HeldLease::safe_until() const noexcept { return state_->deadline(); }
std::uint64_t HeldLease::renewals() const noexcept { return state_->renewals.load(); }

bool HeldLease::valid() const noexcept {
    return state_ && state_->state == State::active && !state_->released &&
           !detail::expired(std::chrono::steady_clock::now(), state_->deadline());
}

std::optional<LossReason> HeldLease::loss() const noexcept {
    if (state_ && state_->state == State::lost) return state_->reason.load();
    return std::nullopt;
}

std::expected<ReleaseStatus, std::error_code> HeldLease::release() {
    // Renewal stops before the release is sent, so no renewal can follow (and re-extend) it.
    keeper_->remove(state_);
    state_->released = true;
    state_->stop.request_stop();
    return keeper_->release(*state_);
}

}  // namespace fencelock
