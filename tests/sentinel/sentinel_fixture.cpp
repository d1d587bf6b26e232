#include "sentinel/sentinel_fixture.hpp"

#include <cstdlib>
#include <fstream>
#include <stdexcept>

#include "fencelock/duration.hpp"

#include "support/eventually.hpp"

namespace fencelock::test_support {

SharedSentinelGroup& SharedSentinelGroup::get() {
    static SharedSentinelGroup group;
    return group;
}

SharedSentinelGroup::SharedSentinelGroup() {
    if (const char* state = std::getenv("FENCELOCK_SENTINEL_STATE")) {
        std::ifstream in(state);
        if (!std::getline(in, url_)) throw std::runtime_error(std::string("no URL in ") + state);
    } else {
        own_ = std::make_unique<local::SentinelGroup>();
        url_ = own_->url();
    }
    url_ = with_query(url_, "failover_grace=" + format_duration(test_failover_grace));
    auto ep = parse_redis_url(url_);
    if (!ep) throw std::runtime_error(ep.error().message);
    endpoint_ = *ep;
    // The fixture's group has the default shape (SentinelGroupOptions{}).
    const local::SentinelGroupOptions defaults;
    shape_ = {.master_name = endpoint_.master_name, .replicas = defaults.replicas};
    for (const auto& s : endpoint_.sentinels) shape_.sentinel_ports.push_back(s.port);
    wait_past_grace();
}

std::string with_query(const std::string& url, const std::string& query) {
    const auto hash = url.rfind('#');
    return url.substr(0, hash) + (url.find('?') == std::string::npos ? "?" : "&") + query + url.substr(hash);
}

void SharedSentinelGroup::wait_past_grace() const { local::wait_master_known_for(shape_, test_failover_grace); }

std::uint16_t SharedSentinelGroup::master_port() const {
    const auto port = local::majority_master_port(shape_);
    if (!port) throw std::runtime_error("no majority of sentinels names a master");
    return *port;
}

std::string SharedSentinelGroup::master_cli(const std::vector<std::string>& args) const {
    return local::cli_at(master_port(), args);
}

std::uint16_t SharedSentinelGroup::fail_over(std::chrono::milliseconds timeout) const {
    local::wait_group_ready(shape_, timeout);
    const std::uint16_t old_master = master_port();
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::uint16_t now = old_master;
    const auto moved = [&] {
        const auto port = local::majority_master_port(shape_);
        if (!port || *port == old_master) return false;
        now = *port;
        return local::cli_at(now, {"ROLE"}).starts_with("master");
    };
    // A sentinel gives a forced failover up, and does not retry it, when it finds no replica it
    // deems good (NOGOODSLAVE: its view of a replica comes from an INFO up to 10 s old, so a
    // replica a test before this one paused can still look disconnected) or when the promoted
    // replica does not report its new role within the failover timeout (a loaded machine).
    // Ask again (INPROG while an attempt runs) until the master moves or the time is up.
    for (std::size_t ask = 0; std::chrono::steady_clock::now() < deadline; ++ask) {
        const std::uint16_t sentinel = shape_.sentinel_ports[ask % shape_.sentinel_ports.size()];
        const std::string answer = local::cli_at(sentinel, {"SENTINEL", "FAILOVER", shape_.master_name});
        if (answer != "OK" && !answer.starts_with("INPROG") && !answer.starts_with("NOGOODSLAVE"))
            throw std::runtime_error("SENTINEL FAILOVER: " + answer);
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (eventually(moved, std::min<std::chrono::milliseconds>(left, std::chrono::seconds(10)))) {
            local::wait_group_ready(shape_, timeout);
            return now;
        }
    }
    throw std::runtime_error("no new master after SENTINEL FAILOVER");
}

}  // namespace fencelock::test_support
