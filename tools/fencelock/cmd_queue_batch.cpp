// queue enqueue: one job from flags, or many from JSON lines on stdin (--stdin). Both paths
// check a job the same way (checked_request), and every job is checked before Redis is
// contacted: a bad flag or a bad line (named by its number) enqueues nothing (exit 2).
#include <nlohmann/json.hpp>

#include <iostream>
#include <span>

#include "cli.hpp"
#include "cmd_queue.hpp"
#include "common/random_id.hpp"
#include "fencelock/queue.hpp"
#include "fencelock/store_text.hpp"

namespace fencelock::cli {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

/// Jobs per pipelined round trip: a few hundred kilobytes at most for usual payloads.
constexpr std::size_t batch_size = 500;

/// A job's fields before checking. `key` empty: a fresh random key (see --help).
struct JobFields {
    std::string resource, key, payload = "{}";
    milliseconds delay{0};
};

/// Names what is wrong: `name` is the flag or line field ("resource", "key", "payload").
using Refusal = std::function<InputError(std::string_view name, std::string message)>;

EnqueueRequest checked_request(JobFields f, const Refusal& refuse) {
    auto resource = ResourceName::make(f.resource);
    if (!resource) throw refuse("resource", resource.error().message);
    if (auto ok = validate_store_text(f.resource); !ok) throw refuse("resource", ok.error().message);
    // No key: a random one. The job is then not idempotent: an enqueue retried after a lost
    // reply adds a second job. A key derived from resource + payload would instead drop, for
    // good, every later job equal to an earlier one (keys are never forgotten).
    if (f.key.empty()) f.key = detail::random_hex_id();
    if (f.key.size() > 256) throw refuse("key", "must be 1..256 bytes");
    if (auto ok = validate_store_text(f.key); !ok) throw refuse("key", ok.error().message);
    if (!json::accept(f.payload)) throw refuse("payload", "is not valid JSON");
    if (f.delay < milliseconds::zero()) throw refuse("delay", "must not be negative");
    return EnqueueRequest{.resource = *resource, .idempotency_key = f.key, .payload = f.payload, .delay = f.delay};
}

/// One line of --stdin: {"resource": R, "key"?: K, "payload"?: JSON, "delay_ms"?: N}.
JobFields line_fields(const std::string& line, const Refusal& refuse) {
    const json j = json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) throw refuse("line", "is not a JSON object");
    JobFields f;
    for (auto it = j.begin(); it != j.end(); ++it) {
        const std::string& name = it.key();
        const json& value = it.value();
        if (name == "resource" || name == "key") {
            if (!value.is_string()) throw refuse(name, "must be a string");
            (name == "resource" ? f.resource : f.key) = value.get<std::string>();
            if (name == "key" && f.key.empty()) throw refuse("key", "must be 1..256 bytes");
        } else if (name == "payload") {
            f.payload = value.dump();
        } else if (name == "delay_ms") {
            if (!value.is_number_integer() || value.get<std::int64_t>() < 0)
                throw refuse(name, "must be a non-negative integer (milliseconds)");
            f.delay = milliseconds(value.get<std::int64_t>());
        } else {
            throw refuse(name, "is not a job field (resource, key, payload, delay_ms)");
        }
    }
    if (!j.contains("resource")) throw refuse("resource", "is missing");
    return f;
}

/// Every non-blank line of `in`, checked; `lines` gets each job's line number.
std::vector<EnqueueRequest> read_requests(std::istream& in, std::vector<std::size_t>& lines) {
    std::vector<EnqueueRequest> requests;
    std::string line;
    for (std::size_t number = 1; std::getline(in, line); ++number) {
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        const Refusal refuse = [number](std::string_view name, std::string message) {
            return InputError{"--stdin", "line " + std::to_string(number) + ": " + std::string(name) + " " + message};
        };
        requests.push_back(checked_request(line_fields(line, refuse), refuse));
        lines.push_back(number);
    }
    if (requests.empty()) throw InputError{"--stdin", "no job on stdin"};
    return requests;
}

int enqueue_lines(JobQueue& queue) {
    std::vector<std::size_t> lines;
    const auto requests = read_requests(std::cin, lines);
    std::size_t added = 0, duplicates = 0;
    for (std::size_t at = 0; at < requests.size(); at += batch_size) {
        const auto chunk = std::span(requests).subspan(at, std::min(batch_size, requests.size() - at));
        auto r = queue.enqueue_batch(chunk);
        // The chunks before were enqueued: the same input again is safe (keys deduplicate),
        // except for lines without a key.
        if (!r) return redis_failure(r.error());
        for (std::size_t i = 0; i < r->size(); ++i) {
            const auto& e = (*r)[i];
            (e.duplicate ? duplicates : added) += 1;
            emit(
                {{"line", lines[at + i]}, {"id", e.id}, {"key", chunk[i].idempotency_key}, {"duplicate", e.duplicate}});
        }
    }
    emit({{"enqueued", added}, {"duplicates", duplicates}});
    return exit_ok;
}

}  // namespace

int run_enqueue(const Globals& g, const EnqueueArgs& a, const CLI::App& cmd) {
    auto options = queue_options(g, a.queue);
    if (a.from_stdin) {
        for (const char* flag : {"--resource", "--key", "--payload", "--delay"})
            if (cmd.count(flag)) throw InputError{flag, "comes from each line with --stdin"};
        auto queue = open_queue(std::move(options));
        return enqueue_lines(queue);
    }
    if (!cmd.count("--resource")) throw InputError{"--resource", "is required (or --stdin)"};
    if (cmd.count("--key") && a.key.empty()) throw InputError{"--key", "must be 1..256 bytes"};
    const auto delay = cmd.count("--delay") ? parse_duration_flag("--delay", a.delay) : milliseconds(0);
    const auto request =
        checked_request(JobFields{a.resource, a.key, a.payload, delay}, [](std::string_view name, std::string message) {
            return InputError{"--" + std::string(name), std::move(message)};
        });
    auto queue = open_queue(std::move(options));
    auto r = queue.enqueue(request);
    if (!r) return redis_failure(r.error());
    emit({{"id", r->id}, {"key", request.idempotency_key}, {"duplicate", r->duplicate}});
    return exit_ok;
}

}  // namespace fencelock::cli
