// store init / create / write / read / claim / relay: the fenced stores from the command line.
// Every input is validated before the database is opened, so invalid input (exit 2) never
// changes anything.
#include <nlohmann/json.hpp>

#include <charconv>
#include <cstdint>
#include <limits>
#include <memory>

#include "cli.hpp"
#include "fencelock/store.hpp"
#include "fencelock/store_outbox.hpp"
#include "store_flags.hpp"

namespace fencelock::cli {
namespace {

using nlohmann::json;

struct StoreArgs {
    std::string db, resource, fence, value, owner, key;
    std::size_t batch = 100;
};

FencingToken parse_fence(const std::string& text) {
    std::uint64_t v = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    const bool digits = !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
    if (!digits || ec != std::errc() || end != text.data() + text.size())
        throw InputError{"--fence", "must be a positive integer, got '" + text + "'"};
    if (v == 0) throw InputError{"--fence", "must be positive (fences start at 1)"};
    if (v > max_fence)
        throw InputError{"--fence",
                         "is above " + std::to_string(max_fence) + " (2^53 - 1), the largest fencelock issues"};
    return FencingToken(v);
}

ResourceName parse_store_resource(const std::string& text) {
    auto r = ResourceName::make(text);
    if (!r) throw InputError{"--resource", r.error().message};
    require_store_text("--resource", text);
    return *r;
}

std::optional<std::string> parse_key(const CLI::App& cmd, const std::string& key) {
    if (cmd.count("--idempotency-key") == 0) return std::nullopt;
    if (key.empty() || key.size() > 256) throw InputError{"--idempotency-key", "must be 1..256 bytes"};
    require_store_text("--idempotency-key", key);
    return key;
}

FencedStore open_store(const std::string& url) {
    if (url.empty()) throw InputError{"--db", "a database URL is required (--db or $FENCELOCK_DB_URL)"};
    auto store = FencedStore::create(StoreOptions{.url = url});
    if (!store) {
        const std::string field = store.error().field == "url" ? "--db" : store.error().field;
        throw InputError{field, store.error().message};
    }
    return std::move(*store);
}

int store_failure(const StoreError& e) {
    if (e.code == store_errc::invalid_input) return fail(exit_invalid_input, "invalid_input", e.detail);
    const auto kind = classify_store_error(e.code);
    std::cerr << "fencelock: " << e.code.message() << ": " << e.detail << " [" << to_string(kind) << "]\n";
    emit({{"error", "store"}, {"code", to_name(e.code)}, {"kind", to_string(kind)}, {"message", e.detail}});
    return exit_unavailable;
}

json completion(const Completion& c) {
    return {{"key", c.key}, {"resource", c.resource}, {"fence", c.fence.value()}, {"value", c.outcome}};
}

int run_init(const StoreArgs& a) {
    auto store = open_store(a.db);
    auto v = store.init();
    if (!v) return store_failure(v.error());
    emit({{"initialized", true}, {"backend", to_string(store.backend())}, {"schema_version", *v}});
    return exit_ok;
}

int run_create(const StoreArgs& a) {
    const auto resource = parse_store_resource(a.resource);
    require_store_text("--value", a.value);
    auto store = open_store(a.db);
    auto r = store.create_resource(resource, a.value);
    if (!r) return store_failure(r.error());
    emit({{"result", to_string(*r)}, {"resource", resource.str()}});
    return *r == CreateStatus::created ? exit_ok : exit_negative;
}

int run_write(const StoreArgs& a, const CLI::App& cmd) {
    const auto resource = parse_store_resource(a.resource);
    const auto fence = parse_fence(a.fence);
    require_store_text("--value", a.value);
    WriteOptions options{.owner = cmd.count("--owner") ? std::optional(parse_owner(a.owner)) : std::nullopt,
                         .idempotency_key = parse_key(cmd, a.key)};
    auto store = open_store(a.db);
    auto r = store.write(resource, fence, a.value, options);
    if (!r) return store_failure(r.error());
    json out{{"result", to_string(r->status)}, {"resource", resource.str()}, {"last_fence", r->last_fence.value()}};
    if (r->first) out["first"] = completion(*r->first);
    emit(out);
    return r->status == WriteStatus::applied || r->status == WriteStatus::duplicate ? exit_ok : exit_negative;
}

int run_read(const StoreArgs& a) {
    const auto resource = parse_store_resource(a.resource);
    auto store = open_store(a.db);
    auto r = store.read(resource);
    if (!r) return store_failure(r.error());
    if (!*r) {
        emit({{"result", "not_found"}, {"resource", resource.str()}, {"last_fence", 0}});
        return exit_negative;
    }
    json out{{"result", "found"},
             {"resource", resource.str()},
             {"value", (*r)->value},
             {"last_fence", (*r)->last_fence.value()}};
    out["last_owner"] = (*r)->last_owner ? json(*(*r)->last_owner) : json(nullptr);
    emit(out);
    return exit_ok;
}

int run_claim(const StoreArgs& a) {
    const auto resource = parse_store_resource(a.resource);
    const auto fence = parse_fence(a.fence);
    const auto owner = parse_owner(a.owner);
    auto store = open_store(a.db);
    auto r = store.claim(resource, fence, owner);
    if (!r) return store_failure(r.error());
    emit({{"result", to_string(r->status)},
          {"resource", resource.str()},
          {"value", r->value},
          {"last_fence", r->last_fence.value()}});
    return r->status == ClaimStatus::claimed ? exit_ok : exit_negative;
}

int run_relay(const Globals& g, const StoreArgs& a) {
    if (a.batch < 1) throw InputError{"--batch", "must be at least 1"};
    const auto [endpoint, timeout] = redis_target(g);
    auto store = open_store(a.db);
    auto relay = OutboxRelay::create(store, RelayOptions{.endpoint = endpoint,
                                                         .connect_timeout = timeout,
                                                         .command_timeout = timeout,
                                                         .batch_size = a.batch});
    if (!relay)
        throw InputError{relay.error().field == "endpoint" ? "--redis" : "--" + relay.error().field,
                         relay.error().message};
    std::size_t total = 0;
    for (;;) {
        auto n = relay->relay_once();
        if (!n) {
            if (n.error().code.category() != store_error_category()) return redis_failure(n.error().code);
            return store_failure(n.error());
        }
        total += *n;
        if (*n < a.batch) break;
    }
    emit({{"published", total}});
    return exit_ok;
}

}  // namespace

void register_store_commands(Program& p) {
    auto* store = p.app.add_subcommand("store", "fenced writes in PostgreSQL or SQLite (see docs/STORE.md)");
    store->require_subcommand(1);
    auto args = std::make_shared<StoreArgs>();
    auto add = [&](const char* name, const char* help) {
        auto* cmd = store->add_subcommand(name, help);
        cmd->add_option("--db", args->db, "sqlite:///path/file.db or postgresql://user@host:port/dbname")
            ->envname("FENCELOCK_DB_URL");
        return cmd;
    };
    auto resource = [&](CLI::App* cmd) { cmd->add_option("--resource", args->resource, "resource name")->required(); };

    auto* init = add("init", "create the tables (idempotent) and record the schema version");
    init->callback([&p, args] { p.run = [args] { return run_init(*args); }; });

    auto* create = add("create", "insert a resource row with last_fence 0");
    resource(create);
    create->add_option("--value", args->value, "initial value (default empty)");
    create->callback([&p, args] { p.run = [args] { return run_create(*args); }; });

    auto* write = add("write", "set the value if FENCE is newer than the resource's last fence");
    resource(write);
    write->add_option("--fence", args->fence, "fencing token from acquire")->required();
    write->add_option("--value", args->value, "new value")->required();
    write->add_option("--owner", args->owner, "record this owner; accept an equal fence from the same owner");
    write->add_option("--idempotency-key", args->key, "apply at most once per key");
    write->callback([&p, args, write] { p.run = [args, write] { return run_write(*args, *write); }; });

    auto* read = add("read", "print a resource's value and last fence");
    resource(read);
    read->callback([&p, args] { p.run = [args] { return run_read(*args); }; });

    auto* claim = add("claim", "read the value and raise the last fence to FENCE (fenced read)");
    resource(claim);
    claim->add_option("--fence", args->fence, "fencing token from acquire")->required();
    claim->add_option("--owner", args->owner, "owner token; the same owner may then write with FENCE")->required();
    claim->callback([&p, args] { p.run = [args] { return run_claim(*args); }; });

    auto* relay = add("relay", "publish unsent outbox events to Redis streams (global --redis)");
    relay->add_option("--batch", args->batch, "events per pass (default 100)");
    relay->callback([&p, args] { p.run = [&p, args] { return run_relay(p.globals, *args); }; });
}

}  // namespace fencelock::cli
