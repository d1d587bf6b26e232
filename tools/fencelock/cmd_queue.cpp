// queue enqueue / stats / dead / retry-dead: the worker queue from the command line (the
// `worker` command is in cmd_worker.cpp). Every input is validated before Redis is contacted,
// so invalid input (exit 2) never changes anything; Redis failures exit 4.
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <memory>

#include "cli.hpp"
#include "cmd_queue.hpp"
#include "fencelock/queue.hpp"
#include "store_flags.hpp"

namespace fencelock::cli {


namespace {

using nlohmann::json;

struct QueueArgs {
    std::string queue, resource, key, payload = "{}", delay, id;
    std::size_t limit = 100;
};

}  // namespace

QueueOptions queue_options(const Globals& g, const std::string& queue) {
    if (auto ok = validate_queue_name(queue); !ok) throw InputError{"--queue", ok.error().message};
    const auto [endpoint, timeout] = redis_target(g);
    QueueOptions o{.queue = queue, .endpoint = endpoint, .connect_timeout = timeout, .command_timeout = timeout};
    if (auto ok = o.validate(); !ok) throw InputError{"--" + ok.error().field, ok.error().message};
    return o;
}

namespace {

JobQueue open_queue(QueueOptions options) {
    auto q = JobQueue::create(std::move(options));
    if (!q) throw InputError{"--" + q.error().field, q.error().message};
    return std::move(*q);
}

json job_json(const Job& j) {
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

int run_enqueue(const Globals& g, const QueueArgs& a, const CLI::App& cmd) {
    auto options = queue_options(g, a.queue);
    auto resource = ResourceName::make(a.resource);
    if (!resource) throw InputError{"--resource", resource.error().message};
    require_store_text("--resource", a.resource);
    if (a.key.empty() || a.key.size() > 256) throw InputError{"--key", "must be 1..256 bytes"};
    require_store_text("--key", a.key);
    if (!json::accept(a.payload)) throw InputError{"--payload", "is not valid JSON"};
    const auto delay = cmd.count("--delay") ? parse_duration_flag("--delay", a.delay) : std::chrono::milliseconds(0);
    auto queue = open_queue(std::move(options));
    auto r = queue.enqueue(EnqueueRequest{.resource = *resource, .idempotency_key = a.key, .payload = a.payload,
                                          .delay = delay});
    if (!r) return redis_failure(r.error());
    emit({{"id", r->id}, {"duplicate", r->duplicate}});
    return exit_ok;
}

int run_stats(const Globals& g, const QueueArgs& a) {
    auto queue = open_queue(queue_options(g, a.queue));
    auto s = queue.stats();
    if (!s) return redis_failure(s.error());
    json counters = json::object();
    for (const auto& [name, value] : s->counters) counters[name] = value;
    emit({{"ready", s->ready},
          {"delayed", s->delayed},
          {"in_flight", s->in_flight},
          {"dead", s->dead},
          {"completed", s->counter("completed")},
          {"counters", counters}});
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
    if (cmd.count("--id")) {
        if (a.id.size() != 32 || a.id.find_first_not_of("0123456789abcdef") != std::string::npos)
            throw InputError{"--id", "must be a job id (32 lowercase hex characters)"};
        id = a.id;
    }
    auto queue = open_queue(queue_options(g, a.queue));
    auto n = queue.retry_dead(id);
    if (!n) return redis_failure(n.error());
    emit({{"result", id && *n == 0 ? "not_found" : "retried"}, {"retried", *n}});
    return id && *n == 0 ? exit_negative : exit_ok;
}

}  // namespace

void register_queue_commands(Program& p) {
    auto args = std::make_shared<QueueArgs>();
    auto* queue = p.app.add_subcommand("queue", "the worker queue: enqueue jobs, inspect and repair")
                      ->require_subcommand(1);
    auto add_queue = [&](CLI::App* c) { c->add_option("--queue", args->queue, "queue name")->required(); };

    auto* enqueue = queue->add_subcommand("enqueue", "add a job (deduplicated by --key)");
    add_queue(enqueue);
    enqueue->add_option("--resource", args->resource, "what must not run concurrently")->required();
    enqueue->add_option("--key", args->key, "idempotency key (1..256 bytes)")->required();
    enqueue->add_option("--payload", args->payload, "JSON payload (default {})");
    enqueue->add_option("--delay", args->delay, "ready after this long, e.g. 30s");
    enqueue->callback([&p, args, enqueue] { p.run = [&p, args, enqueue] { return run_enqueue(p.globals, *args, *enqueue); }; });

    auto* stats = queue->add_subcommand("stats", "sizes and counters of a queue");
    add_queue(stats);
    stats->callback([&p, args] { p.run = [&p, args] { return run_stats(p.globals, *args); }; });

    auto* dead = queue->add_subcommand("dead", "list dead-lettered jobs with their reasons");
    add_queue(dead);
    dead->add_option("--limit", args->limit, "at most this many (default 100)");
    dead->callback([&p, args] { p.run = [&p, args] { return run_dead(p.globals, *args); }; });

    auto* retry = queue->add_subcommand("retry-dead", "put dead jobs back (all, or --id ID)");
    add_queue(retry);
    retry->add_option("--id", args->id, "only this job");
    retry->callback([&p, args, retry] { p.run = [&p, args, retry] { return run_retry_dead(p.globals, *args, *retry); }; });
    queue->footer("Exit codes: 0 ok; 2 invalid input (nothing changed); 3 retry-dead --id found no such job; "
                  "4 Redis unavailable.");

    register_worker_command(p);
}

}  // namespace fencelock::cli
