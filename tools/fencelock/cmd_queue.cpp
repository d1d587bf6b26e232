// queue stats / dead / retry-dead and the registration of every queue command: the worker
// queue from the command line (enqueue: cmd_queue_batch.cpp; list, show, retry, discard,
// purge: cmd_queue_admin.cpp; the `worker` command: cmd_worker.cpp). Every input is validated
// before Redis is contacted, so invalid input (exit 2) never changes anything; Redis failures
// exit 4.
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <iostream>
#include <memory>

#include "cli.hpp"
#include "cmd_queue.hpp"
#include "fencelock/queue.hpp"

namespace fencelock::cli {

namespace {

using nlohmann::json;

struct QueueArgs {
    std::string queue, id;
    std::size_t limit = 100;
    FormatFlags format;
};

}  // namespace

QueueOptions queue_options(const Globals& g, const std::string& queue) {
    if (auto ok = validate_queue_name(queue); !ok) throw InputError{"--queue", ok.error().message};
    const auto [endpoint, timeout] = redis_target(g);
    QueueOptions o{.queue = queue, .endpoint = endpoint, .connect_timeout = timeout, .command_timeout = timeout};
    if (auto ok = o.validate(); !ok)
        throw InputError{ok.error().field == "endpoint" ? "--redis" : "--" + ok.error().field, ok.error().message};
    return o;
}

JobQueue open_queue(QueueOptions options) {
    auto q = JobQueue::create(std::move(options));
    if (!q) throw InputError{"--" + q.error().field, q.error().message};
    return std::move(*q);
}

nlohmann::json job_json(const Job& j) {
    return {{"id", j.id},
            {"resource", j.resource.str()},
            {"key", j.idempotency_key},
            {"payload", j.payload},
            {"contention_attempts", j.contention_attempts},
            {"business_attempts", j.business_attempts},
            {"infrastructure_attempts", j.infrastructure_attempts},
            {"deliveries", j.deliveries},
            {"last_error", j.last_error}};
}

const std::string& require_job_id(const std::string& field, const std::string& text) {
    if (text.size() != 32 || text.find_first_not_of("0123456789abcdef") != std::string::npos)
        throw InputError{field, "must be a job id (32 lowercase hex characters)"};
    return text;
}

namespace {

int run_stats(const Globals& g, const QueueArgs& a) {
    auto queue = open_queue(queue_options(g, a.queue));
    auto s = queue.stats();
    if (!s) return redis_failure(s.error());
    json counters = json::object();
    for (const auto& [name, value] : s->counters) counters[name] = value;
    const json out{{"ready", s->ready},
                   {"delayed", s->delayed},
                   {"in_flight", s->in_flight},
                   {"dead", s->dead},
                   {"completed", s->counter("completed")},
                   {"counters", counters}};
    if (chosen_format(a.format) == Format::json) {
        emit(out);
        return exit_ok;
    }
    std::vector<std::pair<std::string, std::string>> fields{{"queue", a.queue}};
    for (const char* key : {"ready", "delayed", "in_flight", "dead", "completed"})
        fields.emplace_back(key, out[key].dump());
    for (const auto& [name, value] : s->counters)
        if (name != "completed") fields.emplace_back(name, std::to_string(value));
    print_fields(std::cout, fields);
    return exit_ok;
}

int run_dead(const Globals& g, const QueueArgs& a) {
    if (a.limit < 1) throw InputError{"--limit", "must be at least 1"};
    auto queue = open_queue(queue_options(g, a.queue));
    auto d = queue.dead(a.limit);
    if (!d) return redis_failure(d.error());
    json jobs = json::array();
    for (const auto& dj : *d) {
        json j = job_json(dj.job);
        j["reason"] = dj.reason;
        j["failed_ms"] = dj.failed_ms;
        jobs.push_back(std::move(j));
    }
    emit({{"queue", a.queue}, {"jobs", jobs}});
    return exit_ok;
}

int run_retry_dead(const Globals& g, const QueueArgs& a, const CLI::App& cmd) {
    std::optional<std::string> id;
    if (cmd.count("--id")) id = require_job_id("--id", a.id);
    auto queue = open_queue(queue_options(g, a.queue));
    auto n = queue.retry_dead(id);
    if (!n) return redis_failure(n.error());
    emit({{"result", id && *n == 0 ? "not_found" : "retried"}, {"retried", *n}});
    return id && *n == 0 ? exit_negative : exit_ok;
}

}  // namespace

void register_queue_commands(Program& p) {
    auto args = std::make_shared<QueueArgs>();
    auto* queue =
        p.app.add_subcommand("queue", "the worker queue: enqueue jobs, inspect and repair")->require_subcommand(1);
    auto add_queue = [&](CLI::App* c) { c->add_option("--queue", args->queue, "queue name")->required(); };

    auto enqueue_args = std::make_shared<EnqueueArgs>();
    auto* enqueue =
        queue->add_subcommand("enqueue", "add a job (deduplicated by --key), or one per JSON line on stdin (--stdin)");
    enqueue->add_option("--queue", enqueue_args->queue, "queue name")->required();
    enqueue->add_option("--resource", enqueue_args->resource, "what must not run concurrently (required)");
    enqueue->add_option("--key", enqueue_args->key,
                        "idempotency key, 1..256 bytes: a second enqueue with it adds nothing. Default: a fresh "
                        "random key, printed; the job is then not idempotent (an enqueue retried after a lost "
                        "reply adds it twice)");
    enqueue->add_option("--payload", enqueue_args->payload, "JSON payload (default {})");
    enqueue->add_option("--delay", enqueue_args->delay, "ready after this long, e.g. 30s");
    enqueue->add_flag("--stdin", enqueue_args->from_stdin,
                      "one job per line: {\"resource\":R,\"key\"?:K,\"payload\"?:JSON,\"delay_ms\"?:N}; every "
                      "line is checked first, a bad one enqueues nothing (exit 2, its line number named)");
    enqueue->callback([&p, enqueue_args, enqueue] {
        p.run = [&p, enqueue_args, enqueue] { return run_enqueue(p.globals, *enqueue_args, *enqueue); };
    });

    auto* stats = queue->add_subcommand("stats", "sizes and counters of a queue: a table, or JSON");
    add_queue(stats);
    add_format_flags(*stats, args->format);
    stats->callback([&p, args] { p.run = [&p, args] { return run_stats(p.globals, *args); }; });

    auto* dead = queue->add_subcommand("dead", "list dead-lettered jobs with their reasons");
    add_queue(dead);
    dead->add_option("--limit", args->limit, "at most this many (default 100)");
    dead->callback([&p, args] { p.run = [&p, args] { return run_dead(p.globals, *args); }; });

    auto* retry = queue->add_subcommand("retry-dead", "put dead jobs back (all, or --id ID)");
    add_queue(retry);
    retry->add_option("--id", args->id, "only this job");
    retry->callback(
        [&p, args, retry] { p.run = [&p, args, retry] { return run_retry_dead(p.globals, *args, *retry); }; });
    register_queue_admin_commands(p, *queue);
    queue->footer(
        "Exit codes: 0 ok; 2 invalid input, or purge without --yes (nothing changed); 3 no such job "
        "(show, retry, discard, retry-dead --id: not_found) or not a dead one (retry, discard: not_dead); "
        "4 Redis unavailable.");

    register_worker_command(p);
}

}  // namespace fencelock::cli
