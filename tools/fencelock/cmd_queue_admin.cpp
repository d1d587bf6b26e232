// queue list / show / retry / discard / purge: an operator's look into a queue and the repairs
// of single jobs (JobQueue::list, find, retry, discard, purge in fencelock/queue.hpp). Input is validated before Redis
// is contacted; a purge needs --yes. Exit 3 when the job named is missing (not_found) or not dead (not_dead).
#include <nlohmann/json.hpp>

#include <iostream>
#include <memory>

#include "cli.hpp"
#include "cmd_queue.hpp"
#include "fencelock/queue.hpp"

namespace fencelock::cli {
namespace {

using nlohmann::json;

struct AdminArgs {
    std::string queue, state, after, id;
    std::size_t limit = 100;
    bool yes = false;
    FormatFlags format;
};

/// queue list's table: what tells jobs apart at a glance, per state.
std::vector<Column> job_columns(JobState state) {
    std::vector<Column> columns{field_column("ID", "id"), field_column("RESOURCE", "resource"),
                                field_column("KEY", "key")};
    if (state == JobState::running) {
        columns.push_back(field_column("CONSUMER", "consumer"));
        columns.push_back(duration_column("IDLE", "idle_ms"));
    }
    if (state == JobState::delayed)
        columns.push_back({"DUE", [](const json& j) { return human_time(j.value("due_ms", std::int64_t{0})); }});
    if (state == JobState::dead)
        columns.push_back({"FAILED", [](const json& j) { return human_time(j.value("failed_ms", std::int64_t{0})); }});
    columns.push_back(field_column("DELIVERIES", "deliveries"));
    columns.push_back(field_column(state == JobState::dead ? "REASON" : "LAST ERROR",
                                   state == JobState::dead ? "reason" : "last_error"));
    return columns;
}

JobState parse_state(const std::string& flag, const std::string& text) {
    auto s = job_state_from_name(text);
    if (!s) throw InputError{flag, "must be ready, running, delayed or dead"};
    return *s;
}

/// One flat object per job; the fields another state has are null (stable keys for tables).
json queued_json(const QueuedJob& q) {
    json j = job_json(q.job);
    const auto when = [](bool applies, const json& value) { return applies ? value : json(nullptr); };
    const bool running = q.state == JobState::running, delayed = q.state == JobState::delayed,
               dead = q.state == JobState::dead;
    j["state"] = to_string(q.state);
    j["entry_id"] = when(!delayed, q.entry_id);
    j["due_ms"] = when(delayed, q.due_ms);
    j["consumer"] = when(running, q.consumer);
    j["idle_ms"] = when(running, q.idle_ms);
    j["delivery_count"] = when(running, q.delivery_count);
    j["reason"] = when(dead, q.reason);
    j["failed_ms"] = when(dead, q.failed_ms);
    return j;
}

int run_list(const Globals& g, const AdminArgs& a) {
    auto options = queue_options(g, a.queue);
    const JobState state = parse_state("--state", a.state);
    if (a.limit < 1 || a.limit > max_page_size)
        throw InputError{"--limit", "must be 1.." + std::to_string(max_page_size)};
    if (!valid_cursor(state, a.after))
        throw InputError{"--after", "is not a next_cursor of a --state " + a.state + " page"};
    auto queue = open_queue(std::move(options));
    auto page = queue.list(ListRequest{.state = state, .limit = a.limit, .after = a.after});
    if (!page) return redis_failure(page.error());
    if (chosen_format(a.format) == Format::table) {
        std::vector<json> jobs;
        for (const auto& job : page->jobs) jobs.push_back(queued_json(job));
        print_records(Format::table, job_columns(state), jobs, "no " + a.state + " jobs in queue " + a.queue);
        if (page->next_cursor) std::cout << "more: --after " << *page->next_cursor << "\n";
        return exit_ok;
    }
    for (const auto& job : page->jobs) emit(queued_json(job));
    // The last line always closes the page: a reader knows it saw the whole answer.
    emit({{"queue", a.queue},
          {"state", a.state},
          {"listed", page->jobs.size()},
          {"next_cursor", page->next_cursor ? json(*page->next_cursor) : json(nullptr)}});
    return exit_ok;
}

int run_show(const Globals& g, const AdminArgs& a) {
    auto options = queue_options(g, a.queue);
    const auto& id = require_job_id("ID", a.id);
    auto queue = open_queue(std::move(options));
    auto found = queue.find(id);
    if (!found) return redis_failure(found.error());
    if (!*found) {
        emit({{"result", "not_found"}, {"id", id}});
        return exit_negative;
    }
    json j = queued_json(**found);
    j["result"] = "found";
    emit(j);
    return exit_ok;
}

/// retry ID / discard ID: the change, or why nothing changed (exit 3).
int run_dead_job_change(const Globals& g, const AdminArgs& a, bool discard) {
    auto options = queue_options(g, a.queue);
    const auto& id = require_job_id("ID", a.id);
    auto queue = open_queue(std::move(options));
    auto r = discard ? queue.discard(id) : queue.retry(id);
    if (!r) return redis_failure(r.error());
    switch (*r) {
        case DeadJobChange::done: emit({{"result", discard ? "discarded" : "retried"}, {"id", id}}); return exit_ok;
        case DeadJobChange::not_found: emit({{"result", "not_found"}, {"id", id}}); return exit_negative;
        case DeadJobChange::not_dead: emit({{"result", "not_dead"}, {"id", id}}); return exit_negative;
    }
    return exit_internal;
}

int run_purge(const Globals& g, const AdminArgs& a, const CLI::App& cmd) {
    auto options = queue_options(g, a.queue);
    std::vector<JobState> states{JobState::ready, JobState::delayed, JobState::dead};
    if (cmd.count("--state")) {
        const JobState s = parse_state("--state", a.state);
        if (s == JobState::running)
            throw InputError{"--state", "running jobs cannot be purged (their handlers are at work)"};
        states = {s};
    }
    if (!a.yes)
        throw InputError{"--yes", "purge deletes every " +
                                      (cmd.count("--state") ? a.state : std::string("ready, delayed and dead")) +
                                      " job of queue " + a.queue + " for good; add --yes to confirm"};
    auto queue = open_queue(std::move(options));
    json out{{"result", "purged"}, {"queue", a.queue}};
    std::size_t total = 0;
    for (JobState s : states) {
        auto n = queue.purge(s);
        if (!n) return redis_failure(n.error());
        out[std::string(to_string(s))] = *n;
        total += *n;
    }
    out["purged"] = total;
    emit(out);
    return exit_ok;
}

}  // namespace

void register_queue_admin_commands(Program& p, CLI::App& queue) {
    auto args = std::make_shared<AdminArgs>();
    auto add_queue = [&](CLI::App* c) { c->add_option("--queue", args->queue, "queue name")->required(); };

    auto* list = queue.add_subcommand("list",
                                      "jobs in one state, oldest first: a table, or one JSON object each, "
                                      "then the page's closing object with next_cursor (null on the last page)");
    add_queue(list);
    list->add_option("--state", args->state, "ready, running, delayed or dead")->required();
    list->add_option("--limit", args->limit, "jobs per page, 1..1000 (default 100)");
    list->add_option("--after", args->after, "the next_cursor of the page before");
    add_format_flags(*list, args->format);
    list->callback([&p, args] { p.run = [&p, args] { return run_list(p.globals, *args); }; });

    auto* show = queue.add_subcommand("show", "one job by id, in whatever state (reads the whole queue)");
    add_queue(show);
    show->add_option("id", args->id, "job id")->required();
    show->callback([&p, args] { p.run = [&p, args] { return run_show(p.globals, *args); }; });

    auto* retry = queue.add_subcommand("retry", "put one dead job back, business attempts reset");
    add_queue(retry);
    retry->add_option("id", args->id, "job id")->required();
    retry->callback([&p, args] { p.run = [&p, args] { return run_dead_job_change(p.globals, *args, false); }; });

    auto* discard = queue.add_subcommand("discard", "delete one dead job and forget its idempotency key");
    add_queue(discard);
    discard->add_option("id", args->id, "job id")->required();
    discard->callback([&p, args] { p.run = [&p, args] { return run_dead_job_change(p.globals, *args, true); }; });

    auto* purge = queue.add_subcommand("purge",
                                       "delete every ready, delayed and dead job (or those of --state) and "
                                       "forget their idempotency keys; running jobs stay");
    add_queue(purge);
    purge->add_option("--state", args->state, "ready, delayed or dead (default: all three)");
    purge->add_flag("--yes", args->yes, "confirm: without it nothing is deleted (exit 2)");
    purge->callback([&p, args, purge] { p.run = [&p, args, purge] { return run_purge(p.globals, *args, *purge); }; });
}

}  // namespace fencelock::cli
