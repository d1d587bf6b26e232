// Sentinel resolution and the failover-grace estimate as transcripts (redis/sentinel_resolve_fsm.hpp):
// each test scripts what the sentinels and the master answer, in the shapes Redis 7.0.15 sends,
// checks every step the machine takes, and then what MasterTerm makes of the result at moments
// the test chooses. No server, no clock.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "redis/sentinel_resolve_fsm.hpp"
#include "reply_builders.hpp"

namespace fencelock::detail {
namespace {

using namespace std::chrono_literals;
using test_support::A;
using test_support::Nil;
using test_support::S;
using Clock = std::chrono::steady_clock;
using Result = std::expected<SentinelResolved, SentinelUnavailable>;

const ServerAddress a{"127.0.0.1", 7001};
const ServerAddress b{"127.0.0.1", 7002};
const std::vector<HostAndPort> three{{"127.0.0.1", 26379}, {"127.0.0.1", 26380}, {"127.0.0.1", 26381}};
constexpr auto grace = 30s;
const Clock::time_point t0 = Clock::time_point{} + 1000h;  // an arbitrary moment, far from the epoch

SentinelResolveOptions with_grace(std::chrono::milliseconds g = grace, bool trust_first_term = true) {
    return {.master_name = "mymaster", .sentinels = three, .grace = g, .trust_first_term = trust_first_term};
}

// SENTINEL get-master-addr-by-name's answer.
Reply addr(const ServerAddress& m) { return A({S(m.host), S(std::to_string(m.port))}); }

// SENTINEL MASTER's answer as 7.0.15 sends it over RESP2: a flat field/value list.
Reply master_record(const ServerAddress& m, std::chrono::milliseconds age, std::uint64_t epoch) {
    return A({S("name"),
              S("mymaster"),
              S("ip"),
              S(m.host),
              S("port"),
              S(std::to_string(m.port)),
              S("runid"),
              S("9f5cbb6b1f4c2bb8e2a3d0f3a1f6d1ac3b1f8e21"),
              S("flags"),
              S("master"),
              S("link-pending-commands"),
              S("0"),
              S("link-refcount"),
              S("1"),
              S("last-ping-sent"),
              S("0"),
              S("last-ok-ping-reply"),
              S("512"),
              S("last-ping-reply"),
              S("512"),
              S("down-after-milliseconds"),
              S("5000"),
              S("info-refresh"),
              S("3213"),
              S("role-reported"),
              S("master"),
              S("role-reported-time"),
              S(std::to_string(age.count())),
              S("config-epoch"),
              S(std::to_string(epoch)),
              S("num-slaves"),
              S("1"),
              S("num-other-sentinels"),
              S("2"),
              S("quorum"),
              S("2"),
              S("failover-timeout"),
              S("180000"),
              S("parallel-syncs"),
              S("1")});
}

// One sentinel naming `m`, `age` after it saw it become master, in config epoch `epoch`.
SentinelQueryReplies names(const ServerAddress& m, std::chrono::milliseconds age, std::uint64_t epoch = 3) {
    return std::vector<Reply>{addr(m), master_record(m, age, epoch)};
}
SentinelQueryReplies knows_no_master() {
    return std::vector<Reply>{Nil(), Reply::make_error("ERR No such master with that name")};
}
SentinelQueryReplies unreachable(std::string words, std::string cause) {
    return std::unexpected(SentinelQueryFailure{std::move(words), std::move(cause)});
}

// The master's INFO replication and INFO persistence, whole sections as 7.0.15 prints them.
// A promotion (Sentinel's REPLICAOF NO ONE) keeps the old id as master_replid2 and sets
// second_repl_offset; a start from an RDB counts the keys it loaded.
SentinelQueryReplies info(bool promoted, int keys_loaded = 0) {
    const std::string replication =
        "# Replication\r\nrole:master\r\nconnected_slaves:1\r\n"
        "slave0:ip=127.0.0.1,port=7002,state=online,offset=1234,lag=0\r\n"
        "master_failover_state:no-failover\r\nmaster_replid:d5bbcd3f1f3a9f42e6b1e0d8a7b44c2f3e1f0a9c\r\n"
        "master_replid2:" +
        std::string(promoted ? "5e0c1b0a7d2f4c8e9a6b3d1f0e2c4a6b8d0f1e3a"
                             : "0000000000000000000000000000000000000000") +
        "\r\nmaster_repl_offset:1234\r\nsecond_repl_offset:" + (promoted ? "1" : "-1") +
        "\r\nrepl_backlog_active:1\r\nrepl_backlog_size:1048576\r\nrepl_backlog_first_byte_offset:1\r\n"
        "repl_backlog_histlen:1234\r\n";
    const std::string persistence =
        "# Persistence\r\nloading:0\r\nasync_loading:0\r\ncurrent_cow_peak:0\r\ncurrent_cow_size:0\r\n"
        "current_cow_size_age:0\r\ncurrent_fork_perc:0.00\r\ncurrent_save_keys_processed:0\r\n"
        "current_save_keys_total:0\r\nrdb_changes_since_last_save:0\r\nrdb_bgsave_in_progress:0\r\n"
        "rdb_last_save_time:1765000000\r\nrdb_last_bgsave_status:ok\r\nrdb_last_bgsave_time_sec:-1\r\n"
        "rdb_current_bgsave_time_sec:-1\r\nrdb_saves:0\r\nrdb_last_cow_size:0\r\nrdb_last_load_keys_expired:0\r\n"
        "rdb_last_load_keys_loaded:" +
        std::to_string(keys_loaded) + "\r\naof_enabled:0\r\naof_rewrite_in_progress:0\r\naof_rewrite_scheduled:0\r\n";
    return std::vector<Reply>{S(replication), S(persistence)};
}

// One scripted exchange: whom the machine must ask next ("sentinel 2", "master 127.0.0.1:7001")
// and what comes back.
struct Exchange {
    std::string to;
    SentinelQueryReplies replies;
};

std::string target(const SentinelStep& step) {
    switch (step.kind) {
        case SentinelStep::Kind::ask_sentinel: return "sentinel " + std::to_string(step.sentinel);
        case SentinelStep::Kind::ask_master:
            return "master " + step.master.host + ":" + std::to_string(step.master.port);
        case SentinelStep::Kind::done: break;
    }
    return "done";
}

// Plays `script` through one resolve: every step must be the next exchange's target, and the
// machine must be done exactly when the script ends.
Result play(const SentinelResolveOptions& options, const std::vector<Exchange>& script) {
    SentinelResolveFsm fsm(options);
    SentinelStep step = fsm.start();
    for (std::size_t i = 0; i < script.size(); ++i) {
        EXPECT_EQ(target(step), script[i].to) << "exchange " << i;
        if (step.kind == SentinelStep::Kind::done) return fsm.result();
        step = fsm.on_reply(script[i].replies);
    }
    EXPECT_EQ(target(step), "done") << "the script ended, the machine did not";
    while (step.kind != SentinelStep::Kind::done) step = fsm.on_reply(unreachable("not in the script", ""));
    return fsm.result();
}

using Commands = std::vector<std::vector<std::string>>;

TEST(SentinelResolveFsm, AsksForTheAddressAndTheRecordInOneRoundTripAndStopsAtAMajority) {
    SentinelResolveFsm fsm(with_grace());
    SentinelStep step = fsm.start();
    ASSERT_EQ(step.kind, SentinelStep::Kind::ask_sentinel);
    EXPECT_EQ(step.sentinel, 0u);
    EXPECT_EQ(step.commands,
              (Commands{{"SENTINEL", "get-master-addr-by-name", "mymaster"}, {"SENTINEL", "MASTER", "mymaster"}}));
    step = fsm.on_reply(names(a, 40000ms));
    ASSERT_EQ(target(step), "sentinel 1");
    EXPECT_EQ(step.commands.size(), 2u);
    step = fsm.on_reply(names(a, 41000ms));
    ASSERT_EQ(step.kind, SentinelStep::Kind::done) << "two of three agree: the third is not asked";
    const Result& r = fsm.result();
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->master, a);
    EXPECT_EQ(r->sentinel, 0u);
    ASSERT_TRUE(r->term.has_value());
    EXPECT_EQ(r->term->view.age, 40000ms) << "the youngest of the majority";
    EXPECT_EQ(r->term->view.epoch, 3u);
    EXPECT_FALSE(r->term->first_term);
    EXPECT_THROW(fsm.on_reply(names(a, 1ms)), std::logic_error);
}

TEST(SentinelResolveFsm, WithoutAGraceOneAnswerDecidesAndNoTermIsKept) {
    SentinelResolveFsm fsm(with_grace(0ms));
    SentinelStep step = fsm.start();
    EXPECT_EQ(step.commands, (Commands{{"SENTINEL", "get-master-addr-by-name", "mymaster"}}));
    step = fsm.on_reply(std::vector<Reply>{addr(b)});
    ASSERT_EQ(step.kind, SentinelStep::Kind::done);
    ASSERT_TRUE(fsm.result().has_value());
    EXPECT_EQ(fsm.result()->master, b);
    EXPECT_FALSE(fsm.result()->term.has_value());
}

TEST(SentinelResolveFsm, AMinorityNamingTheOldMasterIsOutvoted) {
    const Result r = play(with_grace(), {{"sentinel 0", names(a, 20000ms, 4)},
                                         {"sentinel 1", names(b, 90000ms, 3)},  // missed the failover
                                         {"sentinel 2", names(a, 25000ms, 4)}});
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->master, a);
    EXPECT_EQ(r->term->view.age, 20000ms) << "the old master's older record does not count";
    EXPECT_EQ(r->term->view.epoch, 4u);
}

TEST(SentinelResolveFsm, NoMajorityFailsClosedWithTheWholeGrace) {
    // The first answer still names the master to connect to; its age counts for nothing.
    const Result r = play(with_grace(), {{"sentinel 0", names(a, 20000ms)},
                                         {"sentinel 1", names(b, 90000ms)},
                                         {"sentinel 2", unreachable("Connection refused", "connection_refused")}});
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->master, a);
    EXPECT_EQ(r->term->view.age, 0ms);
    MasterTerm term(grace);
    EXPECT_EQ(term.note(r->master, *r->term, t0, 0).grants_from, t0 + grace);

    // An ACL that refuses SENTINEL MASTER leaves no view to agree with: the same.
    const SentinelQueryReplies refused = std::vector<Reply>{
        addr(a), Reply::make_error("NOPERM this user has no permissions to run the 'sentinel|master' command")};
    const Result acl = play(with_grace(), {{"sentinel 0", refused}, {"sentinel 1", refused}, {"sentinel 2", refused}});
    ASSERT_TRUE(acl.has_value());
    EXPECT_EQ(acl->term->view.age, 0ms);
}

TEST(SentinelResolveFsm, NoSentinelNamingAMasterIsUnavailableWithEachOnesReason) {
    const Result r = play(with_grace(), {{"sentinel 0", unreachable("Connection refused", "connection_refused")},
                                         {"sentinel 1", unreachable("no reply in time", "handshake_timeout")},
                                         {"sentinel 2", knows_no_master()}});
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().detail,
              "no sentinel named a master for 'mymaster': sentinel 127.0.0.1:26379: Connection refused; "
              "sentinel 127.0.0.1:26380: no reply in time; sentinel 127.0.0.1:26381: it knows no master named "
              "'mymaster'");
    EXPECT_EQ(r.error().cause, "") << "the last sentinel's cause, and it has none";

    const Result refused =
        play(with_grace(), {{"sentinel 0", knows_no_master()},
                            {"sentinel 1", knows_no_master()},
                            {"sentinel 2", unreachable("Connection refused", "connection_refused")}});
    ASSERT_FALSE(refused.has_value());
    EXPECT_EQ(refused.error().cause, "connection_refused");

    const Result none = play({.master_name = "mymaster", .sentinels = {}, .grace = grace}, {});
    ASSERT_FALSE(none.has_value());
    EXPECT_EQ(none.error().detail, "no sentinel named a master for 'mymaster': ");
}

TEST(SentinelResolveFsm, AnAnswerThatDoesNotReadAsTheNamedMasterDoesNotCount) {
    // A record about another address (the sentinel switched between the two commands) is no view.
    const Result r = play(with_grace(), {{"sentinel 0", std::vector<Reply>{addr(a), master_record(b, 1000ms, 4)}},
                                         {"sentinel 1", names(a, 9000ms)},
                                         {"sentinel 2", names(a, 8000ms)}});
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->term->view.age, 8000ms);
    // An address without a usable port names no master.
    const Result bad = play(with_grace(0ms), {{"sentinel 0", std::vector<Reply>{A({S("127.0.0.1"), S("0")})}},
                                              {"sentinel 1", std::vector<Reply>{A({S("127.0.0.1"), S("7001x")})}},
                                              {"sentinel 2", std::vector<Reply>{A({S(""), S("7001")})}}});
    ASSERT_FALSE(bad.has_value());
    EXPECT_EQ(bad.error().detail,
              "no sentinel named a master for 'mymaster': sentinel 127.0.0.1:26379: it knows no master named "
              "'mymaster'; sentinel 127.0.0.1:26380: it knows no master named 'mymaster'; sentinel "
              "127.0.0.1:26381: it knows no master named 'mymaster'");
}

TEST(SentinelResolveFsm, ASentinelThatFailedFirstIsAskedAgainForAgreement) {
    const Result r = play(with_grace(), {{"sentinel 0", unreachable("Connection refused", "connection_refused")},
                                         {"sentinel 1", names(a, 50000ms)},
                                         {"sentinel 0", names(a, 45000ms)}});
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->sentinel, 1u) << "the one that named it first goes to the front";
    EXPECT_EQ(r->term->view.age, 45000ms);

    const Result still_down =
        play(with_grace(), {{"sentinel 0", unreachable("Connection refused", "connection_refused")},
                            {"sentinel 1", names(a, 50000ms)},
                            {"sentinel 0", unreachable("Connection refused", "connection_refused")},
                            {"sentinel 2", names(a, 52000ms)}});
    ASSERT_TRUE(still_down.has_value());
    EXPECT_EQ(still_down->term->view.age, 50000ms);
}

TEST(SentinelResolveFsm, AFailoverStartsTheGraceAtTheMomentItIsNoted) {
    MasterTerm term(grace);
    // Before: A has been master for ten minutes in epoch 3; grants are long allowed.
    const Result before =
        play(with_grace(), {{"sentinel 0", names(a, 600000ms, 3)}, {"sentinel 1", names(a, 600100ms, 3)}});
    ASSERT_TRUE(before.has_value());
    EXPECT_EQ(term.note(before->master, *before->term, t0, 0).change, TermChange::new_term);
    EXPECT_LE(term.grants_from(), t0);

    // A fails; the sentinels promote B in epoch 4 and have seen it as master for 2 s.
    const Result after = play(with_grace(), {{"sentinel 0", names(b, 2000ms, 4)}, {"sentinel 1", names(b, 2500ms, 4)}});
    ASSERT_TRUE(after.has_value());
    const Clock::time_point told = t0 + 20s;
    const TermNote noted = term.note(after->master, *after->term, told, 1);
    EXPECT_EQ(noted.change, TermChange::new_term);
    EXPECT_EQ(noted.grants_from, told + grace - 2000ms);

    // A sentinel that still names the dead A, however old its record, moves nothing.
    const Result stale =
        play(with_grace(), {{"sentinel 0", names(a, 600100ms, 3)}, {"sentinel 1", names(a, 600200ms, 3)}});
    const TermNote ignored = term.note(stale->master, *stale->term, told + 1s, 1);
    EXPECT_EQ(ignored.change, TermChange::stale);
    EXPECT_EQ(ignored.grants_from, told + grace - 2000ms);

    // A later answer about B's term, from a sentinel that learned of it late, errs late: the
    // earlier moment stands.
    const TermNote late = term.note(b, TermEvidence{MasterView{2800ms, 4}, false}, told + 1s, 1);
    EXPECT_EQ(late.change, TermChange::same_term);
    EXPECT_EQ(late.grants_from, told + grace - 2000ms);
}

TEST(SentinelResolveFsm, ASwitchHeardSinceMakesTheSameMasterAndEpochAnotherTerm) {
    // A failover away and back to A that this process heard of but whose epoch it never saw
    // move: the same master and epoch, a start moment within the jitter.
    const TermEvidence first{MasterView{10000ms, 3}, false};
    const TermEvidence again{MasterView{10500ms, 3}, false};  // at t0 + 1 s: 0.5 s later
    MasterTerm quiet(grace);
    quiet.note(a, first, t0, 0);
    const TermNote unheard = quiet.note(a, again, t0 + 1s, 0);
    EXPECT_EQ(unheard.change, TermChange::same_term);
    EXPECT_EQ(unheard.grants_from, t0 + 20s);

    MasterTerm switched(grace);
    switched.note(a, first, t0, 0);
    const TermNote heard = switched.note(a, again, t0 + 1s, 1);
    EXPECT_EQ(heard.change, TermChange::new_term);
    EXPECT_EQ(heard.grants_from, t0 + 1s + grace - 10500ms);
}

TEST(SentinelResolveFsm, AFirstTermTheMasterConfirmsOwesNoGrace) {
    const Result r = play(with_grace(), {{"sentinel 0", names(a, 3000ms, 0)},
                                         {"sentinel 1", names(a, 3100ms, 0)},
                                         {"master 127.0.0.1:7001", info(false)}});
    ASSERT_TRUE(r.has_value());
    EXPECT_TRUE(r->term->view.first_term);
    EXPECT_TRUE(r->term->first_term);
    MasterTerm term(grace);
    EXPECT_EQ(term.note(r->master, *r->term, t0, 0).grants_from, t0) << "grants at once";

    // The INFO step asks exactly the two sections.
    SentinelResolveFsm fsm(with_grace());
    fsm.start();
    fsm.on_reply(names(a, 3000ms, 0));
    const SentinelStep step = fsm.on_reply(names(a, 3100ms, 0));
    ASSERT_EQ(step.kind, SentinelStep::Kind::ask_master);
    EXPECT_EQ(step.master, a);
    EXPECT_EQ(step.commands, (Commands{{"INFO", "replication"}, {"INFO", "persistence"}}));
}

TEST(SentinelResolveFsm, AFirstTermTheMasterDoesNotConfirmOwesTheGrace) {
    const std::vector<Exchange> epoch_zero{{"sentinel 0", names(a, 3000ms, 0)}, {"sentinel 1", names(a, 3100ms, 0)}};
    for (const SentinelQueryReplies& word :
         {info(true), info(false, 12),
          unreachable("NOPERM this user has no permissions to run the 'info' command", "noperm"),
          SentinelQueryReplies(std::vector<Reply>{S("# Replication\r\nrole:master\r\n"), Reply::make_error("ERR")})}) {
        std::vector<Exchange> script = epoch_zero;
        script.push_back({"master 127.0.0.1:7001", word});
        const Result r = play(with_grace(), script);
        ASSERT_TRUE(r.has_value());
        EXPECT_TRUE(r->term->view.first_term);
        EXPECT_FALSE(r->term->first_term);
        MasterTerm term(grace);
        EXPECT_EQ(term.note(r->master, *r->term, t0, 0).grants_from, t0 + grace - 3000ms);
    }
}

TEST(SentinelResolveFsm, TheMasterIsAskedOnlyWhenItsWordCouldMatter) {
    // Not trusted by the URL, older than the grace, or epoch 0 without a majority: no INFO.
    EXPECT_FALSE(
        play(with_grace(grace, false), {{"sentinel 0", names(a, 3000ms, 0)}, {"sentinel 1", names(a, 3000ms, 0)}})
            ->term->first_term);
    EXPECT_FALSE(play(with_grace(), {{"sentinel 0", names(a, 30000ms, 0)}, {"sentinel 1", names(a, 31000ms, 0)}})
                     ->term->first_term);
    EXPECT_FALSE(play(with_grace(), {{"sentinel 0", names(a, 3000ms, 0)},
                                     {"sentinel 1", unreachable("Connection refused", "connection_refused")},
                                     {"sentinel 2", names(b, 3000ms, 0)}})
                     ->term->first_term);
    EXPECT_FALSE(play(with_grace(), {{"sentinel 0", names(a, 3000ms, 0)}, {"sentinel 1", names(a, 3000ms, 1)}})
                     ->term->first_term)
        << "one sentinel saw a failover";
}

TEST(SentinelResolveFsm, AStartMomentLaterByMoreThanTheJitterIsANewTerm) {
    // Same master, epoch 0, no switch heard: a hand promotion away and back looks like this.
    MasterTerm term(grace);
    term.note(a, TermEvidence{MasterView{5000ms, 0}, false}, t0, 0);  // became master at t0 - 5 s
    ASSERT_EQ(term.grants_from(), t0 + 25s);
    const TermNote noted = term.note(a, TermEvidence{MasterView{2000ms, 0}, false}, t0 + 10s, 0);  // at t0 + 8 s
    EXPECT_EQ(noted.change, TermChange::new_term);
    EXPECT_EQ(noted.grants_from, t0 + 10s + grace - 2000ms);

    MasterTerm edge(grace);
    edge.note(a, TermEvidence{MasterView{5000ms, 0}, false}, t0, 0);
    EXPECT_EQ(edge.note(a, TermEvidence{MasterView{3999ms, 0}, false}, t0, 0).change, TermChange::new_term)
        << "1001 ms later";
}

TEST(SentinelResolveFsm, AStartMomentWithinTheJitterIsTheSameTerm) {
    MasterTerm term(grace);
    term.note(a, TermEvidence{MasterView{5000ms, 0}, false}, t0, 0);
    // Estimated later from a sentinel that learned of it 1 s late: the earlier moment stands.
    const TermNote noted = term.note(a, TermEvidence{MasterView{14000ms, 0}, false}, t0 + 10s, 0);
    EXPECT_EQ(noted.change, TermChange::same_term);
    EXPECT_EQ(noted.grants_from, t0 + 25s);
    // An earlier estimate of the same term moves the moment earlier.
    EXPECT_EQ(term.note(a, TermEvidence{MasterView{16000ms, 0}, false}, t0 + 10s, 0).grants_from, t0 + 24s);
    // Exactly the jitter later is still the same term.
    MasterTerm edge(grace);
    edge.note(a, TermEvidence{MasterView{5000ms, 0}, false}, t0, 0);
    EXPECT_EQ(edge.note(a, TermEvidence{MasterView{4000ms, 0}, false}, t0, 0).change, TermChange::same_term);
    // And a confirmed first term grants from the moment it is confirmed.
    EXPECT_EQ(term.note(a, TermEvidence{MasterView{16000ms, 0}, true}, t0 + 10s, 0).grants_from, t0 + 10s);
}

}  // namespace
}  // namespace fencelock::detail
