#include "queue/streams_transport.hpp"

#include <charconv>
#include <tuple>

#include "fencelock/error.hpp"
#include "queue/scripts.hpp"
#include "redis/script_runner.hpp"

namespace fencelock::detail {
namespace {

std::error_code unexpected_reply() { return make_error_code(errc::protocol_error); }

/// One script call with any number of keys and arguments (EVALSHA, EVAL on NOSCRIPT).
Result<Reply> eval(Connection& c, const ScriptSource& script, std::vector<std::string_view> keys,
                   std::vector<std::string_view> args) {
    const ScriptCall call{std::move(keys), std::move(args)};
    auto r = run_script_batch(c, script, std::span<const ScriptCall>(&call, 1));
    if (!r) return std::unexpected(r.error());
    return std::move(r->front());
}

Result<Reply> command(Connection& c, std::vector<std::string_view> argv) {
    auto r = c.command(argv);
    if (!r) return std::unexpected(r.error());
    if (r->kind == Reply::Kind::error) return std::unexpected(error_from_reply(r->str));
    return std::move(*r);
}

std::uint64_t to_u64(const Reply& r) {
    if (r.kind == Reply::Kind::integer) return r.integer < 0 ? 0 : static_cast<std::uint64_t>(r.integer);
    std::uint64_t v = 0;
    std::from_chars(r.str.data(), r.str.data() + r.str.size(), v);
    return v;
}

/// The reason and failure time a dead-letter entry carries beside the job's fields.
std::pair<std::string, std::int64_t> dead_fields(const Reply& f) {
    std::pair<std::string, std::int64_t> out{"", 0};
    for (std::size_t i = 0; i + 1 < f.elements.size(); i += 2) {
        if (f.elements[i].str == "reason") out.first = f.elements[i + 1].str;
        if (f.elements[i].str == "failed_ms") out.second = static_cast<std::int64_t>(to_u64(f.elements[i + 1]));
    }
    return out;
}

/// A job of list.lua / find.lua: {where, consumer, idle_ms, deliveries, fields} from `at` on.
QueuedJob queued_job(std::string_view queue, JobState state, const Reply& r, std::size_t at) {
    const Reply& fields = r.elements[at + 4];
    QueuedJob q{.job = job_for_display(queue, fields), .state = state};
    if (state == JobState::delayed) {
        q.due_ms = static_cast<std::int64_t>(to_u64(r.elements[at]));
    } else {
        q.entry_id = r.elements[at].str;
    }
    if (state == JobState::running) {
        q.consumer = r.elements[at + 1].str;
        q.idle_ms = static_cast<std::int64_t>(to_u64(r.elements[at + 2]));
        q.delivery_count = static_cast<std::uint32_t>(to_u64(r.elements[at + 3]));
    }
    if (state == JobState::dead) std::tie(q.reason, q.failed_ms) = dead_fields(fields);
    return q;
}

bool is_job_reply(const Reply& r, std::size_t at) {
    return r.kind == Reply::Kind::array && r.elements.size() == at + 5 && r.elements[at + 4].kind == Reply::Kind::array;
}

}  // namespace

Result<void> StreamsTransport::ensure_group(Connection& c) const {
    auto r =
        c.command(std::vector<std::string_view>{"XGROUP", "CREATE", keys_.stream, consumer_group, "0", "MKSTREAM"});
    if (!r) return std::unexpected(r.error());
    if (r->kind == Reply::Kind::error && !r->str.starts_with("BUSYGROUP"))
        return std::unexpected(error_from_reply(r->str));
    return {};
}

Result<std::vector<EnqueueResult>> StreamsTransport::enqueue(Connection& c, std::span<const QueuedRequest> jobs) const {
    // The strings every call's views point into, kept until the batch is sent.
    std::vector<std::vector<std::string>> owned;
    owned.reserve(jobs.size());
    std::vector<ScriptCall> calls;
    calls.reserve(jobs.size());
    for (const auto& [job, delay] : jobs) {
        auto& strings = owned.emplace_back(encode_job(job));
        strings.push_back(std::to_string(delay.count()));
        std::vector<std::string_view> args{job.id, job.idempotency_key, strings.back()};
        args.insert(args.end(), strings.begin(), strings.end() - 1);
        calls.push_back(ScriptCall{{keys_.stream, keys_.delayed, keys_.keys, keys_.stats}, std::move(args)});
    }
    auto replies = run_script_batch(c, queue_scripts::enqueue, calls);
    if (!replies) return std::unexpected(replies.error());
    std::vector<EnqueueResult> out;
    out.reserve(replies->size());
    for (auto& r : *replies) {
        if (!r) return std::unexpected(r.error());
        if (r->kind != Reply::Kind::array || r->elements.size() != 2) return std::unexpected(unexpected_reply());
        out.push_back(EnqueueResult{.id = r->elements[1].str, .duplicate = r->elements[0].integer == 0});
    }
    return out;
}

Result<std::optional<Entry>> StreamsTransport::read(Connection& c, const std::string& consumer,
                                                    milliseconds block) const {
    const std::string block_ms = std::to_string(block.count());
    auto r = c.command(std::vector<std::string_view>{"XREADGROUP", "GROUP", consumer_group, consumer, "COUNT", "1",
                                                     "BLOCK", block_ms, "STREAMS", keys_.stream, ">"});
    if (!r) return std::unexpected(r.error());
    if (r->kind == Reply::Kind::error) {
        if (r->str.starts_with("NOGROUP")) {
            if (auto g = ensure_group(c); !g) return std::unexpected(g.error());
            return std::optional<Entry>{};
        }
        return std::unexpected(error_from_reply(r->str));
    }
    if (r->kind == Reply::Kind::nil) return std::optional<Entry>{};
    // [[stream, [[id, [field, value, ...]]]]]
    if (r->kind != Reply::Kind::array || r->elements.empty() || r->elements[0].elements.size() != 2)
        return std::unexpected(unexpected_reply());
    auto& entries = r->elements[0].elements[1].elements;
    if (entries.empty()) return std::optional<Entry>{};
    auto& e = entries[0];
    if (e.elements.size() != 2) return std::unexpected(unexpected_reply());
    return std::optional<Entry>(Entry{e.elements[0].str, 1, std::move(e.elements[1])});
}

Result<StreamsTransport::Reclaimed> StreamsTransport::reclaim(Connection& c, const std::string& consumer,
                                                              milliseconds min_idle, const std::string& cursor) const {
    const std::string idle = std::to_string(min_idle.count());
    auto r = eval(c, queue_scripts::reclaim, {keys_.stream}, {consumer, idle, cursor});
    if (!r) return std::unexpected(r.error());
    if (r->kind != Reply::Kind::array || r->elements.empty()) return std::unexpected(unexpected_reply());
    Reclaimed out{r->elements[0].str, std::nullopt};
    if (r->elements.size() == 4) {
        out.entry =
            Entry{r->elements[1].str, static_cast<std::uint32_t>(to_u64(r->elements[2])), std::move(r->elements[3])};
    }
    return out;
}

Result<StreamsTransport::Promoted> StreamsTransport::promote(Connection& c, std::size_t limit) const {
    const std::string n = std::to_string(limit);
    auto r = eval(c, queue_scripts::promote, {keys_.stream, keys_.delayed}, {n});
    if (!r) return std::unexpected(r.error());
    if (r->kind != Reply::Kind::array || r->elements.size() != 2) return std::unexpected(unexpected_reply());
    Promoted p{static_cast<std::size_t>(to_u64(r->elements[0])), std::nullopt};
    if (r->elements[1].integer >= 0) p.next_due = milliseconds(r->elements[1].integer);
    return p;
}

Result<bool> StreamsTransport::complete(Connection& c, const std::string& consumer, const std::string& entry_id,
                                        std::string_view counter) const {
    auto r = eval(c, queue_scripts::complete, {keys_.stream, keys_.stats}, {consumer, entry_id, counter});
    if (!r) return std::unexpected(r.error());
    return r->integer == 1;
}

Result<bool> StreamsTransport::requeue(Connection& c, const std::string& consumer, const std::string& entry_id,
                                       const Job& job, milliseconds delay, std::string_view counter) const {
    const std::string delay_ms = std::to_string(delay.count());
    const auto fields = encode_job(job);
    std::vector<std::string_view> args{consumer, entry_id, delay_ms, counter};
    args.insert(args.end(), fields.begin(), fields.end());
    auto r = eval(c, queue_scripts::requeue, {keys_.stream, keys_.delayed, keys_.stats}, std::move(args));
    if (!r) return std::unexpected(r.error());
    return r->integer == 1;
}

Result<bool> StreamsTransport::dead(Connection& c, const std::string& consumer, const std::string& entry_id,
                                    const std::string& reason, const std::vector<std::string>& fields) const {
    std::vector<std::string_view> args{consumer, entry_id, reason};
    args.insert(args.end(), fields.begin(), fields.end());
    auto r = eval(c, queue_scripts::dead, {keys_.stream, keys_.dead, keys_.stats}, std::move(args));
    if (!r) return std::unexpected(r.error());
    return r->kind == Reply::Kind::string;
}

Result<std::vector<std::string>> StreamsTransport::heartbeat(
    Connection& c, const std::vector<std::pair<std::string, std::string>>& in_flight) const {
    std::vector<std::string_view> args;
    for (const auto& [consumer, id] : in_flight) {
        args.push_back(consumer);
        args.push_back(id);
    }
    auto r = eval(c, queue_scripts::heartbeat, {keys_.stream}, std::move(args));
    if (!r) return std::unexpected(r.error());
    std::vector<std::string> lost;
    for (const auto& e : r->elements) lost.push_back(e.str);
    return lost;
}

Result<bool> StreamsTransport::leave(Connection& c, const std::string& consumer) const {
    auto r = eval(c, queue_scripts::leave, {keys_.stream}, {consumer});
    if (!r) return std::unexpected(r.error());
    return r->integer == 1;
}

Result<QueueStats> StreamsTransport::stats(Connection& c) const {
    auto r = eval(c, queue_scripts::stats, {keys_.stream, keys_.delayed, keys_.dead, keys_.stats}, {});
    if (!r) return std::unexpected(r.error());
    if (r->kind != Reply::Kind::array || r->elements.size() != 5) return std::unexpected(unexpected_reply());
    QueueStats s;
    const std::uint64_t len = to_u64(r->elements[0]);
    s.in_flight = to_u64(r->elements[1]);
    s.ready = len > s.in_flight ? len - s.in_flight : 0;
    s.delayed = to_u64(r->elements[2]);
    s.dead = to_u64(r->elements[3]);
    const auto& kv = r->elements[4].elements;
    for (std::size_t i = 0; i + 1 < kv.size(); i += 2) s.counters.emplace_back(kv[i].str, to_u64(kv[i + 1]));
    return s;
}

Result<std::vector<DeadJob>> StreamsTransport::dead_jobs(Connection& c, std::size_t limit) const {
    const std::string count = std::to_string(limit);
    auto r = command(c, {"XRANGE", keys_.dead, "-", "+", "COUNT", count});
    if (!r) return std::unexpected(r.error());
    std::vector<DeadJob> out;
    for (const auto& e : r->elements) {
        if (e.elements.size() != 2) continue;
        const Reply& f = e.elements[1];
        auto [reason, failed_ms] = dead_fields(f);
        out.push_back(DeadJob{job_for_display(queue_, f), std::move(reason), failed_ms});
    }
    return out;
}

Result<std::size_t> StreamsTransport::retry_dead(Connection& c, const std::optional<std::string>& id) const {
    const std::string limit = "1000000";
    auto r = eval(c, queue_scripts::retry_dead, {keys_.dead, keys_.stream, keys_.stats}, {id.value_or(""), limit});
    if (!r) return std::unexpected(r.error());
    return static_cast<std::size_t>(to_u64(*r));
}

Result<JobPage> StreamsTransport::list(Connection& c, JobState state, const std::string& after,
                                       std::size_t limit) const {
    const std::string n = std::to_string(limit);
    auto r = eval(c, queue_scripts::list, {keys_.stream, keys_.delayed, keys_.dead}, {to_string(state), after, n});
    if (!r) return std::unexpected(r.error());
    if (r->kind != Reply::Kind::array || r->elements.empty()) return std::unexpected(unexpected_reply());
    JobPage page;
    if (!r->elements[0].str.empty()) page.next_cursor = r->elements[0].str;
    for (std::size_t i = 1; i < r->elements.size(); ++i) {
        if (!is_job_reply(r->elements[i], 0)) return std::unexpected(unexpected_reply());
        page.jobs.push_back(queued_job(queue_, state, r->elements[i], 0));
    }
    return page;
}

Result<std::optional<QueuedJob>> StreamsTransport::find(Connection& c, std::string_view id) const {
    auto r = eval(c, queue_scripts::find, {keys_.stream, keys_.delayed, keys_.dead}, {id});
    if (!r) return std::unexpected(r.error());
    if (r->kind == Reply::Kind::array && r->elements.empty()) return std::optional<QueuedJob>{};
    if (!is_job_reply(*r, 1)) return std::unexpected(unexpected_reply());
    const auto state = job_state_from_name(r->elements[0].str);
    if (!state) return std::unexpected(unexpected_reply());
    return std::optional<QueuedJob>(queued_job(queue_, *state, *r, 1));
}

Result<StreamsTransport::Purged> StreamsTransport::purge(Connection& c, JobState state, const std::string& cursor,
                                                         std::size_t limit, std::string_view only,
                                                         std::string_view counter) const {
    const std::string n = std::to_string(limit);
    auto r = eval(c, queue_scripts::purge, {keys_.stream, keys_.delayed, keys_.dead, keys_.keys, keys_.stats},
                  {to_string(state), cursor, n, only, counter});
    if (!r) return std::unexpected(r.error());
    if (r->kind != Reply::Kind::array || r->elements.size() != 2) return std::unexpected(unexpected_reply());
    return Purged{static_cast<std::size_t>(to_u64(r->elements[0])), r->elements[1].str};
}

}  // namespace fencelock::detail
