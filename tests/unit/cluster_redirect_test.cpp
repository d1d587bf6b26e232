// The redirect rules: MOVED, ASK, TRYAGAIN / CLUSTERDOWN, unreachable nodes, redirect loops.
#include "redis/cluster_redirect.hpp"

#include <gtest/gtest.h>

#include "fencelock/error.hpp"

namespace fencelock::detail {
namespace {

using namespace std::chrono_literals;
using Kind = RedirectStep::Kind;
using clock = RedirectPolicy::clock;

const ServerAddress asked{"127.0.0.1", 7000};
const clock::time_point t0{};

Reply error(std::string text) { return Reply::make_error(std::move(text)); }

TEST(ParseRedirect, MovedAndAsk) {
    auto moved = parse_redirect("MOVED 3999 127.0.0.1:6381", asked);
    ASSERT_TRUE(moved);
    EXPECT_EQ(moved->kind, Redirect::Kind::moved);
    EXPECT_EQ(moved->slot, 3999);
    EXPECT_EQ(moved->to, (ServerAddress{"127.0.0.1", 6381}));
    auto ask = parse_redirect("ASK 1 10.0.0.2:7001", asked);
    ASSERT_TRUE(ask);
    EXPECT_EQ(ask->kind, Redirect::Kind::ask);
    EXPECT_EQ(ask->to, (ServerAddress{"10.0.0.2", 7001}));
}

TEST(ParseRedirect, AnEmptyHostIsTheNodeAsked) {
    auto moved = parse_redirect("MOVED 12 :7003", asked);
    ASSERT_TRUE(moved);
    EXPECT_EQ(moved->to, (ServerAddress{"127.0.0.1", 7003}));
}

TEST(ParseRedirect, AnythingElseIsNotARedirect) {
    for (const char* text : {"ERR unknown", "MOVED", "MOVED 16384 h:1", "MOVED x h:1", "MOVED 1 h", "MOVED 1 h:0",
                             "ASK 1 h:99999", "MOVEDX 1 h:1"})
        EXPECT_FALSE(parse_redirect(text, asked)) << text;
}

TEST(RedirectPolicy, AValueOrAnOrdinaryErrorIsTheAnswer) {
    RedirectPolicy p(t0 + 1s);
    EXPECT_EQ(p.on_reply(Reply::make_integer(1), asked, t0).kind, Kind::done);
    EXPECT_EQ(p.on_reply(error("NOSCRIPT No matching script"), asked, t0).kind, Kind::done);
    EXPECT_EQ(p.on_reply(error("READONLY You can't write"), asked, t0).kind, Kind::done);
}

TEST(RedirectPolicy, MovedAndAskNameTheTarget) {
    RedirectPolicy p(t0 + 1s);
    auto moved = p.on_reply(error("MOVED 5 127.0.0.1:7001"), asked, t0);
    EXPECT_EQ(moved.kind, Kind::moved);
    EXPECT_EQ(moved.redirect.slot, 5);
    EXPECT_EQ(moved.redirect.to.port, 7001);
    auto ask = p.on_reply(error("ASK 5 127.0.0.1:7002"), asked, t0);
    EXPECT_EQ(ask.kind, Kind::ask);
    EXPECT_EQ(ask.redirect.to.port, 7002);
    EXPECT_EQ(p.redirects(), 2u);
}

TEST(RedirectPolicy, TooManyRedirectsGiveUpAsBusy) {
    RedirectPolicy p(t0 + 1s, 3);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(p.on_reply(error("MOVED 5 h:1"), asked, t0).kind, Kind::moved);
    const auto last = p.on_reply(error("MOVED 5 h:1"), asked, t0);
    EXPECT_EQ(last.kind, Kind::give_up);
    EXPECT_EQ(last.error, errc::server_busy);
    EXPECT_EQ(classify(last.error), failure_kind::retryable);
}

TEST(RedirectPolicy, TryagainAndClusterdownWaitWithGrowingPausesUntilTheDeadline) {
    RedirectPolicy p(t0 + 100ms);
    auto first = p.on_reply(error("TRYAGAIN Multiple keys request during rehashing of slot"), asked, t0);
    EXPECT_EQ(first.kind, Kind::wait);
    EXPECT_EQ(first.delay, RedirectPolicy::first_pause);
    auto second = p.on_reply(error("CLUSTERDOWN The cluster is down"), asked, t0 + 10ms);
    EXPECT_EQ(second.kind, Kind::wait);
    EXPECT_EQ(second.delay, 2 * RedirectPolicy::first_pause);
    // A pause that would end past the deadline is not taken: the caller gets server_busy.
    auto late = p.on_reply(error("CLUSTERDOWN The cluster is down"), asked, t0 + 90ms);
    EXPECT_EQ(late.kind, Kind::give_up);
    EXPECT_EQ(late.error, errc::server_busy);
}

TEST(RedirectPolicy, PausesStopGrowingAtTheCap) {
    RedirectPolicy p(t0 + 1h);
    RedirectStep s;
    for (int i = 0; i < 10; ++i) s = p.on_reply(error("TRYAGAIN"), asked, t0);
    EXPECT_EQ(s.delay, RedirectPolicy::max_pause);
}

TEST(RedirectPolicy, AnUnreachableNodeReloadsTheMapButAWrittenCommandIsNeverResent) {
    RedirectPolicy p(t0 + 1s);
    EXPECT_EQ(p.on_transport_error(errc::unavailable, t0).kind, Kind::refresh);
    for (errc e : {errc::reply_timeout, errc::connection_lost, errc::auth_failed}) {
        const auto s = p.on_transport_error(e, t0);
        EXPECT_EQ(s.kind, Kind::give_up);
        EXPECT_EQ(s.error, e);
    }
    EXPECT_EQ(RedirectPolicy(t0 + 5ms).on_transport_error(errc::unavailable, t0).kind, Kind::give_up);
}

}  // namespace
}  // namespace fencelock::detail
