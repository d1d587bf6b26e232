#include "redis/multiplexed_connection.hpp"

#include <algorithm>
#include <cctype>

#include "fencelock/error.hpp"
#include "redis/async_loop.hpp"

namespace fencelock::detail {
namespace {

bool iequals(std::string_view a, std::string_view upper) {
    return a.size() == upper.size() && std::equal(a.begin(), a.end(), upper.begin(), [](char x, char u) {
               return std::toupper(static_cast<unsigned char>(x)) == u;
           });
}

// Commands are checked before anything is sent, because the socket is shared: a command that
// changes the connection would change it for every caller, pub/sub and MONITOR would break
// the in-order matching of replies, WATCH would make other callers' EXECs fail, and a MULTI
// left open would pull other callers' commands into the transaction.
class SharingCheck {
public:
    void add(std::span<const std::string_view> argv) {
        static constexpr std::string_view refused[] = {
            "SELECT",    "AUTH",       "HELLO",      "RESET",       "QUIT",         "MONITOR",     "WATCH",
            "SUBSCRIBE", "PSUBSCRIBE", "SSUBSCRIBE", "UNSUBSCRIBE", "PUNSUBSCRIBE", "SUNSUBSCRIBE"};
        if (argv.empty() || std::ranges::any_of(refused, [&](auto r) { return iequals(argv[0], r); }) ||
            (iequals(argv[0], "CLIENT") && argv.size() > 1 && iequals(argv[1], "REPLY")))
            refused_ = true;
        else if (iequals(argv[0], "MULTI")) in_transaction_ = true;
        else if (iequals(argv[0], "EXEC") || iequals(argv[0], "DISCARD")) in_transaction_ = false;
    }
    bool ok() const { return !refused_ && !in_transaction_; }

private:
    bool refused_ = false;
    bool in_transaction_ = false;
};

class MultiplexedConnection final : public Connection {
public:
    explicit MultiplexedConnection(ConnectionSettings settings) : loop_(std::move(settings)) {}

    std::expected<Reply, std::error_code> command(std::span<const std::string_view> argv) override {
        SharingCheck check;
        check.add(argv);
        if (!check.ok()) return std::unexpected(make_error_code(errc::protocol_error));
        auto r = std::make_shared<AsyncRequest>();
        append_resp(r->wire, argv);
        r->ends.push_back(r->wire.size());
        r = run(std::move(r));
        if (r->error) return std::unexpected(r->error);
        return std::move(r->replies.front());
    }

    std::expected<std::vector<Reply>, std::error_code> pipeline(
        std::span<const std::vector<std::string_view>> commands) override {
        if (commands.empty()) return std::vector<Reply>{};
        SharingCheck check;
        auto r = std::make_shared<AsyncRequest>();
        r->ends.reserve(commands.size());
        for (const auto& argv : commands) {
            check.add(argv);
            append_resp(r->wire, argv);
            r->ends.push_back(r->wire.size());
        }
        if (!check.ok()) return std::unexpected(make_error_code(errc::protocol_error));
        r = run(std::move(r));
        if (r->error) return std::unexpected(r->error);
        return std::move(r->replies);
    }

    MultiplexedStats stats() const noexcept { return loop_.stats(); }

private:
    // On the caller's thread when the connection is idle, otherwise through the loop (see
    // AsyncLoop::call). Once call() returns, the request is all the caller touches: a caller
    // still waiting while the connection is destroyed is failed and returns without using `this`.
    std::shared_ptr<AsyncRequest> run(std::shared_ptr<AsyncRequest> r) {
        loop_.call(r);
        return r;
    }

    AsyncLoop loop_;
};

}  // namespace

std::unique_ptr<Connection> make_multiplexed_connection(ConnectionSettings settings) {
    return std::make_unique<MultiplexedConnection>(std::move(settings));
}

std::optional<MultiplexedStats> multiplexed_stats(const Connection& c) {
    if (const auto* m = dynamic_cast<const MultiplexedConnection*>(&c)) return m->stats();
    return std::nullopt;
}

}  // namespace fencelock::detail
