#pragma once
// When a command whose lease may end gets SIGTERM and SIGKILL: pure, fed with clock readings.
//
// Nothing of the command may run once its lease can have ended in Redis. The client's view of
// that moment is the lease's safe-until (sent + TTL x (1 - drift), renewals move it on), so
// SIGKILL is due at safe-until, and SIGTERM `grace` before it, so the command's own shutdown
// fits inside the lease: when renewals have failed until safe-until - grace, the command is
// asked to stop before anyone else can be granted the lock. A loss the keeper reports earlier
// (another owner, the max hold) or a shutdown stops it at once: SIGTERM, then SIGKILL `grace`
// later or at safe-until, whichever comes first. A grace that cannot fit a healthy lease (see
// max_stop_grace) is refused where the options are read.
#include <algorithm>
#include <chrono>
#include <optional>

namespace fencelock::cli {

/// The longest stop grace a lease of `lease` renewed every `renew_every` leaves room for: while
/// renewals succeed, safe-until stays at least trusted - renew_every ahead (trusted = lease x
/// (1 - drift)); half an interval more is kept for a slow renewal, so a healthy command is
/// never asked to stop. Zero when nothing fits.
inline std::chrono::milliseconds max_stop_grace(std::chrono::milliseconds lease, std::chrono::milliseconds renew_every,
                                                double drift_factor) {
    const auto trusted = std::chrono::duration_cast<std::chrono::milliseconds>(lease * (1.0 - drift_factor));
    const auto room = trusted - renew_every - renew_every / 2;
    return std::max(room, std::chrono::milliseconds::zero());
}

class StopSchedule {
public:
    using time = std::chrono::steady_clock::time_point;
    enum class Action { none, term, kill };

    explicit StopSchedule(std::chrono::milliseconds grace) : grace_(grace) {}

    /// The lease can be relied on until `safe_until` (its latest value: renewals move it on).
    void lease_until(time safe_until) {
        safe_until_ = safe_until;
        if (kill_at_) kill_at_ = std::min(*kill_at_, safe_until);
    }
    /// The lease is lost, or the command must stop for another reason: SIGTERM is due now.
    void stop_now(time now) {
        if (kill_at_) return;
        kill_at_ = now + grace_;
        if (safe_until_) kill_at_ = std::min(*kill_at_, *safe_until_);
        term_due_ = true;
    }
    /// What to send now; each of SIGTERM and SIGKILL is returned once, SIGTERM first.
    Action due(time now) {
        if (!kill_at_ && safe_until_ && now >= *safe_until_ - grace_) stop_now(now);
        if (term_due_) {
            term_due_ = false;
            return Action::term;
        }
        if (kill_at_ && !killed_ && now >= *kill_at_) {
            killed_ = true;
            return Action::kill;
        }
        return Action::none;
    }
    /// When due() next has something to send (nullopt: only an event can change that).
    std::optional<time> next() const {
        if (term_due_) return time::min();
        if (kill_at_) return killed_ ? std::nullopt : std::optional(*kill_at_);
        if (safe_until_) return *safe_until_ - grace_;
        return std::nullopt;
    }
    bool stopping() const noexcept { return kill_at_.has_value(); }
    bool killed() const noexcept { return killed_; }

private:
    std::chrono::milliseconds grace_;
    std::optional<time> safe_until_;
    std::optional<time> kill_at_;
    bool term_due_ = false;
    bool killed_ = false;
};

}  // namespace fencelock::cli
