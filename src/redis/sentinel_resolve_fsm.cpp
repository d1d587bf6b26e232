#include "redis/sentinel_resolve_fsm.hpp"

#include <algorithm>
#include <charconv>
#include <map>
#include <stdexcept>
#include <utility>

namespace fencelock::detail {
namespace {

// ["host", "port"] from get-master-addr-by-name; nullopt for nil (unknown name) or anything else.
std::optional<ServerAddress> master_in(const Reply& reply) {
    if (reply.kind != Reply::Kind::array || reply.elements.size() != 2) return std::nullopt;
    const Reply& host = reply.elements[0];
    const Reply& port = reply.elements[1];
    if (host.kind != Reply::Kind::string || host.str.empty() || port.kind != Reply::Kind::string) return std::nullopt;
    unsigned value = 0;
    const auto [end, ec] = std::from_chars(port.str.data(), port.str.data() + port.str.size(), value);
    if (ec != std::errc{} || end != port.str.data() + port.str.size() || value == 0 || value > 65535)
        return std::nullopt;
    return ServerAddress{host.str, static_cast<std::uint16_t>(value)};
}

// From SENTINEL MASTER's flat [field, value, ...] list, when it is about `master`; nullopt for
// anything else (an error reply, ACL refusal, another address).
std::optional<MasterView> master_view(const Reply& reply, const ServerAddress& master) {
    if (reply.kind != Reply::Kind::array) return std::nullopt;
    std::map<std::string, std::string, std::less<>> fields;
    for (std::size_t i = 0; i + 1 < reply.elements.size(); i += 2)
        fields[reply.elements[i].str] = reply.elements[i + 1].str;
    const auto number = [&](std::string_view name) -> std::optional<std::uint64_t> {
        const auto it = fields.find(name);
        if (it == fields.end()) return std::nullopt;
        std::uint64_t v = 0;
        const auto [end, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
        if (ec != std::errc{} || end != it->second.data() + it->second.size()) return std::nullopt;
        return v;
    };
    const auto ip = fields.find("ip");
    const auto port = number("port");
    const auto age = number("role-reported-time");
    const auto epoch = number("config-epoch");
    if (ip == fields.end() || ip->second != master.host || port != master.port || !age || !epoch) return std::nullopt;
    return MasterView{std::chrono::milliseconds(*age), *epoch};
}

bool grace_on(const SentinelResolveOptions& options) { return options.grace > std::chrono::milliseconds::zero(); }

}  // namespace

SentinelResolveFsm::SentinelResolveFsm(SentinelResolveOptions options) : options_(std::move(options)) {}

SentinelStep SentinelResolveFsm::start() {
    if (options_.sentinels.empty()) return finish(std::nullopt);
    return ask(0);
}

SentinelStep SentinelResolveFsm::on_reply(const SentinelQueryReplies& replies) {
    switch (phase_) {
        case Phase::finding: return on_finding(replies);
        case Phase::agreeing: answers_.push_back(answer_in(replies)); return ask_next_for_agreement();
        case Phase::confirming: {
            // The master's own word on epoch 0 (started_fresh). No answer (refused, timed out,
            // an error reply): not confirmed, the grace as before.
            const bool fresh = replies && replies->size() == 2 && (*replies)[0].kind == Reply::Kind::string &&
                               (*replies)[1].kind == Reply::Kind::string &&
                               started_fresh((*replies)[0].str, (*replies)[1].str);
            return finish(TermEvidence{view_, fresh});
        }
        case Phase::done: break;
    }
    throw std::logic_error("SentinelResolveFsm::on_reply after done");
}

const std::expected<SentinelResolved, SentinelUnavailable>& SentinelResolveFsm::result() const {
    if (!result_) throw std::logic_error("SentinelResolveFsm::result before done");
    return *result_;
}

// One question to one sentinel: the master's address and, when the grace is on, how long this
// sentinel has known it as master, in the same round trip.
SentinelStep SentinelResolveFsm::ask(std::size_t sentinel) const {
    SentinelStep step{.kind = SentinelStep::Kind::ask_sentinel, .sentinel = sentinel, .master = {}, .commands = {}};
    step.commands.push_back({"SENTINEL", "get-master-addr-by-name", options_.master_name});
    if (grace_on(options_)) step.commands.push_back({"SENTINEL", "MASTER", options_.master_name});
    return step;
}

// Step 1: the first sentinel that names a master decides which master; the others' failures
// make the detail when none does.
SentinelStep SentinelResolveFsm::on_finding(const SentinelQueryReplies& replies) {
    auto answer = answer_in(replies);
    if (!answer) {
        const HostAndPort& at = options_.sentinels[next_];
        const std::string failure = replies ? "it knows no master named '" + options_.master_name + "'"
                                            : replies.error().words;
        why_ += (why_.empty() ? "" : "; ") + ("sentinel " + at.host + ":" + std::to_string(at.port) + ": " + failure);
        last_cause_ = replies ? std::string() : replies.error().cause;
        if (++next_ < options_.sentinels.size()) return ask(next_);
        return finish(std::nullopt);
    }
    first_ = next_;
    answers_ = {std::move(answer)};
    if (!grace_on(options_)) return finish(std::nullopt);
    phase_ = Phase::agreeing;
    next_ = 0;
    return ask_next_for_agreement();
}

// Step 2: the youngest view of the master among a majority of the sentinels that name it
// (redis/sentinel_views.hpp says why the youngest): the others are asked in turn until that
// many agree. Too few agree (sentinels down, or naming another master): age zero, the whole
// grace. So does an ACL that refuses SENTINEL MASTER: a stall, never an overlap.
SentinelStep SentinelResolveFsm::ask_next_for_agreement() {
    const ServerAddress& master = answers_.front()->master;
    const std::size_t configured = options_.sentinels.size();
    const auto agreeing = [&] {
        return static_cast<std::size_t>(
            std::ranges::count_if(answers_, [&](const auto& a) { return a && a->master == master && a->view; }));
    };
    for (; next_ < configured && agreeing() < sentinel_majority(configured); ++next_)
        if (next_ != first_) return ask(next_++);
    view_ = youngest_agreeing_view(answers_, master, configured);
    // Step 3: epoch 0 counts only with the master's word, asked only while it could matter.
    if (!options_.trust_first_term || !view_.first_term || view_.age >= options_.grace)
        return finish(TermEvidence{view_, false});
    phase_ = Phase::confirming;
    return {.kind = SentinelStep::Kind::ask_master,
            .sentinel = 0,
            .master = master,
            .commands = {{"INFO", "replication"}, {"INFO", "persistence"}}};
}

SentinelStep SentinelResolveFsm::finish(std::optional<TermEvidence> term) {
    phase_ = Phase::done;
    if (answers_.empty())
        result_.emplace(std::unexpected(SentinelUnavailable{
            "no sentinel named a master for '" + options_.master_name + "': " + why_, last_cause_}));
    else result_.emplace(SentinelResolved{answers_.front()->master, first_, term});
    return {};
}

std::optional<SentinelAnswer> SentinelResolveFsm::answer_in(const SentinelQueryReplies& replies) const {
    if (!replies || replies->empty()) return std::nullopt;
    auto master = master_in(replies->front());
    if (!master) return std::nullopt;
    SentinelAnswer answer{*master, std::nullopt};
    if (replies->size() == 2) answer.view = master_view(replies->back(), *master);
    return answer;
}

TermNote MasterTerm::note(const ServerAddress& master, const TermEvidence& evidence,
                          std::chrono::steady_clock::time_point now, std::uint64_t switches) {
    const MasterView& view = evidence.view;
    const auto owed = evidence.first_term ? std::chrono::milliseconds::zero() : grace_ - view.age;
    const auto from = now + owed;
    const auto start = now - view.age;
    const bool same = master_ == master && epoch_ == view.epoch && switches_ == switches &&
                      start <= start_ + term_start_jitter;
    if (same) {
        grants_from_ = std::min(grants_from_, from);
        return {grants_from_, TermChange::same_term};
    }
    TermChange change = TermChange::stale;
    if (from > grants_from_ || !master_) {
        grants_from_ = std::max(from, grants_from_);
        master_ = master;
        epoch_ = view.epoch;
        start_ = start;
        change = TermChange::new_term;
    }
    switches_ = switches;
    return {grants_from_, change};
}

}  // namespace fencelock::detail
