#pragma once
// What a cluster client does with one command's answer: the redirect rules of the Redis
// Cluster specification as a small I/O-free state machine, one per command.
//
//  - MOVED slot host:port: the slot lives elsewhere for good. Update the slot map, send again
//    to that node.
//  - ASK slot host:port: the slot is being migrated and this key is already (or only) on the
//    target. Send ASKING and the command to the target once; the map is not changed (the
//    slot still belongs to the source until the migration ends).
//  - TRYAGAIN (a multi-key command during a migration) and CLUSTERDOWN (no master for the
//    slot, e.g. during a failover): wait a little and send again, while the deadline allows.
//  - A node that could not be reached with nothing written (unavailable): reload the slot map
//    and send again, while the deadline allows (a killed master is replaced by its replica).
//  - Too many redirects (a map that keeps pointing in circles): give up with server_busy.
//
// Every one of these answers means the command did not run, so sending it again is the same
// as sending it the first time: the caller keeps the same arguments (the same owner token),
// and the lock scripts are idempotent for one owner anyway. An answer lost on the way (reply
// timeout, broken connection) is not retried here: its outcome is unknown, and the caller's
// own rules for that case apply (see DESIGN.md, "Lost replies").
#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>
#include <system_error>

#include "redis/cluster_slot.hpp"
#include "redis/reply.hpp"
#include "redis/topology.hpp"

namespace fencelock::detail {

struct Redirect {
    enum class Kind { moved, ask };
    Kind kind = Kind::moved;
    std::uint16_t slot = 0;
    ServerAddress to;
};

/// Reads "MOVED 3999 127.0.0.1:6381" or "ASK 3999 127.0.0.1:6381" (an empty host, as in
/// "MOVED 3999 :6381", means the host of `asked`); nullopt for any other text.
std::optional<Redirect> parse_redirect(std::string_view error, const ServerAddress& asked);

struct RedirectStep {
    enum class Kind {
        done,     ///< the reply is the answer (a value or an error that is not a redirect)
        moved,    ///< record map.moved(slot, to) and send again to `to`
        ask,      ///< send ASKING + the command to `to`, map unchanged
        wait,     ///< sleep `delay`, then send again to the slot's master
        refresh,  ///< reload the slot map, then send again
        give_up,  ///< fail with `error`
    };
    Kind kind = Kind::done;
    Redirect redirect;  ///< moved, ask
    std::chrono::milliseconds delay{0};
    std::error_code error;
};

class RedirectPolicy {
public:
    using clock = std::chrono::steady_clock;
    static constexpr unsigned default_max_redirects = 16;
    /// Pause before the first resend after TRYAGAIN / CLUSTERDOWN / a node unreachable; it
    /// doubles per resend up to max_pause.
    static constexpr std::chrono::milliseconds first_pause{10}, max_pause{200};

    explicit RedirectPolicy(clock::time_point deadline, unsigned max_redirects = default_max_redirects)
        : deadline_(deadline), max_redirects_(max_redirects) {}

    /// The reply a node at `asked` gave, read at `now`.
    RedirectStep on_reply(const Reply& reply, const ServerAddress& asked, clock::time_point now);
    /// The connection to the slot's node failed with `ec`. Only unavailable (nothing was
    /// written: the node is down or unreachable) is retried, after reloading the map.
    RedirectStep on_transport_error(std::error_code ec, clock::time_point now);

    unsigned redirects() const noexcept { return redirects_; }

private:
    RedirectStep pause_or_give_up(RedirectStep::Kind kind, std::error_code ec, clock::time_point now);

    clock::time_point deadline_;
    unsigned max_redirects_;
    unsigned redirects_ = 0;
    unsigned pauses_ = 0;
};

}  // namespace fencelock::detail
