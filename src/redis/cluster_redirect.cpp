#include "redis/cluster_redirect.hpp"

#include <algorithm>
#include <charconv>

#include "fencelock/error.hpp"

namespace fencelock::detail {
namespace {

template <typename Int>
bool parse_int(std::string_view s, Int& out) {
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return !s.empty() && ec == std::errc{} && end == s.data() + s.size();
}

std::string_view first_word(std::string_view s) { return s.substr(0, s.find(' ')); }

RedirectStep step(RedirectStep::Kind kind) {
    RedirectStep s;
    s.kind = kind;
    return s;
}

RedirectStep give_up(std::error_code ec) {
    RedirectStep s = step(RedirectStep::Kind::give_up);
    s.error = ec;
    return s;
}

}  // namespace

std::optional<Redirect> parse_redirect(std::string_view error, const ServerAddress& asked) {
    Redirect r;
    if (error.starts_with("MOVED ")) r.kind = Redirect::Kind::moved;
    else if (error.starts_with("ASK ")) r.kind = Redirect::Kind::ask;
    else return std::nullopt;
    std::string_view rest = error.substr(error.find(' ') + 1);
    const std::size_t space = rest.find(' ');
    if (space == std::string_view::npos || !parse_int(rest.substr(0, space), r.slot) || r.slot >= cluster_slots)
        return std::nullopt;
    const std::string_view address = rest.substr(space + 1);
    const std::size_t colon = address.rfind(':');
    if (colon == std::string_view::npos || !parse_int(address.substr(colon + 1), r.to.port) || r.to.port == 0)
        return std::nullopt;
    r.to.host = std::string(address.substr(0, colon));
    if (r.to.host.empty()) r.to.host = asked.host;
    return r;
}

RedirectStep RedirectPolicy::pause_or_give_up(RedirectStep::Kind kind, std::error_code ec, clock::time_point now) {
    const auto delay = std::min(max_pause, first_pause * (1u << std::min(pauses_, 5u)));
    if (now + delay >= deadline_) return give_up(ec);
    ++pauses_;
    RedirectStep s = step(kind);
    s.delay = delay;
    return s;
}

RedirectStep RedirectPolicy::on_reply(const Reply& reply, const ServerAddress& asked, clock::time_point now) {
    if (reply.kind != Reply::Kind::error) return step(RedirectStep::Kind::done);
    const std::string_view code = first_word(reply.str);
    if (code == "TRYAGAIN" || code == "CLUSTERDOWN")
        return pause_or_give_up(RedirectStep::Kind::wait, make_error_code(errc::server_busy), now);
    auto redirect = parse_redirect(reply.str, asked);
    if (!redirect) return step(RedirectStep::Kind::done);
    if (++redirects_ > max_redirects_ || now >= deadline_) return give_up(make_error_code(errc::server_busy));
    RedirectStep s =
        step(redirect->kind == Redirect::Kind::moved ? RedirectStep::Kind::moved : RedirectStep::Kind::ask);
    s.redirect = std::move(*redirect);
    return s;
}

RedirectStep RedirectPolicy::on_transport_error(std::error_code ec, clock::time_point now) {
    // A written command may have run: its outcome is the caller's to handle, never resent
    // here. Refused credentials or an evicting server are not cured by another node either.
    if (ec != errc::unavailable) return give_up(ec);
    return pause_or_give_up(RedirectStep::Kind::refresh, ec, now);
}

}  // namespace fencelock::detail
