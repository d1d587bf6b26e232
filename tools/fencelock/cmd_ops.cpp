// Operations: list held locks, force-release a stuck one (audited), read the audit log.
// list and audit print a table on a terminal, else one JSON object per line (one per lock /
// entry; human_output.hpp).
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <iostream>

#include "cli.hpp"
#include "fencelock/admin.hpp"

namespace fencelock::cli {
namespace {

using nlohmann::json;

struct OpsArgs {
    std::string pattern = "*";
    std::size_t limit = 1000;
    std::string resource, reason, owner, operator_name;
    bool even_if_active = false;
    FormatFlags format;
};

/// list's table: the holder as people name it (label, host, pid), its times as durations.
std::vector<Column> lock_columns() {
    return {field_column("RESOURCE", "resource"),
            field_column("FENCE", "fence"),
            duration_column("EXPIRES IN", "pttl_ms"),
            duration_column("HELD FOR", "held_for_ms"),
            {"LAST RENEWAL",
             [](const json& lock) {
                 if (!lock.contains("renewals")) return std::string("-");
                 return lock["renewals"].get<std::uint64_t>() == 0
                            ? std::string("never")
                            : human_duration(lock["since_renew_ms"].get<std::int64_t>()) + " ago";
             }},
            {"HOLDER",
             [](const json& lock) {
                 if (!lock.contains("holder")) return "unreadable: " + lock.value("unreadable", std::string("?"));
                 const json& h = lock["holder"];
                 const std::string label = h.value("label", "");
                 return (label.empty() ? "" : label + " on ") + h.value("host", "?") + " pid " +
                        std::to_string(h.value("pid", std::int64_t{0}));
             }},
            field_column("OWNER", "owner")};
}

std::vector<Column> audit_columns() {
    return {{"TIME", [](const json& e) { return human_time(e.value("time_ms", std::int64_t{0})); }},
            field_column("RESOURCE", "resource"),
            field_column("OPERATOR", "operator"),
            {"HOLDER WAS",
             [](const json& e) {
                 if (e.value("forced_active", false)) return std::string("active (--even-if-active)");
                 return "idle " + human_duration(e.value("since_renew_ms", std::int64_t{0}));
             }},
            field_column("FENCE", "fence"),
            field_column("REASON", "reason")};
}

std::string default_operator() {
    const char* user = std::getenv("SUDO_USER");
    if (user == nullptr || *user == '\0') user = std::getenv("USER");
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    return std::string(user != nullptr && *user != '\0' ? user : "unknown") + "@" + host;
}

json holder_json(const HeldLock& lock) {
    if (lock.unreadable)
        return {{"resource", lock.resource.str()},
                {"unreadable", redis_error_name(lock.unreadable)},
                {"message", lock.unreadable.message()}};
    const HolderState& h = lock.holder;
    return {{"resource", lock.resource.str()},
            {"owner", h.owner},
            {"fence", h.fence.value()},
            {"pttl_ms", h.ttl.count()},
            {"lease_ms", h.lease.count()},
            {"held_for_ms", h.held_for.count()},
            {"since_renew_ms", h.since_renew.count()},
            {"renewals", h.renewals},
            {"holder", {{"host", h.host}, {"pid", h.pid}, {"label", h.label}}}};
}

int run_list(const Globals& g, const OpsArgs& a) {
    if (a.pattern.empty()) throw InputError{"--pattern", "must not be empty (use * for all)"};
    if (a.limit == 0) throw InputError{"--limit", "must be at least 1"};
    LockAdmin admin(make_client(g));
    auto locks = admin.list_locks(a.pattern, a.limit);
    if (!locks) return redis_failure(locks.error());
    const bool insecure = tls_insecure(g);
    std::vector<json> records;
    for (const auto& lock : *locks) {
        records.push_back(holder_json(lock));
        if (insecure) records.back()["tls_insecure"] = true;
    }
    const Format format = chosen_format(a.format);
    if (insecure && format == Format::table)
        std::cout << "TLS NOT VERIFIED (tls_insecure): anyone on the path may have changed this\n";
    const std::string none = "no locks held" + (a.pattern == "*" ? std::string() : " matching " + a.pattern);
    print_records(format, lock_columns(), records, none);
    return exit_ok;
}

int run_force_release(const Globals& g, const OpsArgs& a, const CLI::App& cmd) {
    const auto resource = parse_resource(a.resource);
    if (a.reason.empty()) throw InputError{"--reason", "must say why the lock is being deleted"};
    ForceReleaseRequest request{.reason = a.reason,
                                .operator_name = a.operator_name.empty() ? default_operator() : a.operator_name,
                                .even_if_active = a.even_if_active};
    if (cmd.count("--owner")) request.expected_owner = parse_owner(a.owner);
    LockAdmin admin(make_client(g));
    auto outcome = admin.force_release(resource, request);
    if (!outcome) return redis_failure(outcome.error());
    json out{{"resource", resource.str()},
             {"released", outcome->status == ForceReleaseStatus::released},
             {"result", to_string(outcome->status)}};
    if (!outcome->owner.empty()) out["owner"] = outcome->owner;
    if (outcome->status == ForceReleaseStatus::released || outcome->status == ForceReleaseStatus::active) {
        out["fence"] = outcome->fence.value();
        out["since_renew_ms"] = outcome->since_renew.count();
    }
    if (outcome->status == ForceReleaseStatus::active) {
        out["lease_ms"] = outcome->lease.count();
        out["renewed"] = outcome->renewed;
    }
    if (outcome->status == ForceReleaseStatus::released) {
        out["audit_id"] = outcome->audit_id;
        // The audit trail also goes to the log, for whoever collects stderr.
        std::cerr << json{{"level", "warn"},
                          {"event", "force_release"},
                          {"resource", resource.str()},
                          {"owner", outcome->owner},
                          {"fence", outcome->fence.value()},
                          {"reason", request.reason},
                          {"operator", request.operator_name},
                          {"audit_id", outcome->audit_id}}
                         .dump(-1, ' ', false, json::error_handler_t::replace)
                  << "\n";
    } else if (outcome->status == ForceReleaseStatus::active) {
        std::cerr << "fencelock: refused: the lease was " << (outcome->renewed ? "renewed " : "acquired ")
                  << outcome->since_renew.count() << " ms ago" << (outcome->renewed ? "" : " and never renewed")
                  << " (lease " << outcome->lease.count()
                  << " ms), so its holder is probably alive; pass --even-if-active to delete it anyway\n";
    }
    emit(out);
    return outcome->status == ForceReleaseStatus::released ? exit_ok : exit_negative;
}

int run_audit(const Globals& g, const OpsArgs& a, const CLI::App& cmd) {
    std::optional<ResourceName> resource;
    if (cmd.count("--resource")) resource = parse_resource(a.resource);
    if (a.limit == 0) throw InputError{"--limit", "must be at least 1"};
    LockAdmin admin(make_client(g));
    auto entries = admin.audit_log(resource, a.limit);
    if (!entries) return redis_failure(entries.error());
    std::vector<json> records;
    for (const auto& e : *entries)
        records.push_back({{"id", e.id},
                           {"resource", e.resource},
                           {"owner", e.owner},
                           {"fence", e.fence.value()},
                           {"reason", e.reason},
                           {"operator", e.operator_name},
                           {"time_ms", e.time_ms},
                           {"since_renew_ms", e.since_renew.count()},
                           {"forced_active", e.forced_active}});
    print_records(chosen_format(a.format), audit_columns(), records, "no audited interventions");
    return exit_ok;
}

}  // namespace

void register_ops_commands(Program& p) {
    auto a = std::make_shared<OpsArgs>();
    auto* list = p.app.add_subcommand("list", "held locks (age, TTL, last renewal, holder): a table, or JSON lines");
    list->add_option("--pattern", a->pattern, "Redis glob on resource names (default *)");
    list->add_option("--limit", a->limit, "at most this many (default 1000)");
    add_format_flags(*list, a->format);
    list->callback([&p, a] { p.run = [&p, a] { return run_list(p.globals, *a); }; });

    auto* force = p.app.add_subcommand("force-release", "delete a stuck lock, with an audit entry");
    force->add_option("resource", a->resource, "resource name")->required();
    force->add_option("--reason", a->reason, "why (recorded in the audit entry)")->required();
    force->add_option("--owner", a->owner, "only if this owner holds it");
    force->add_option("--operator", a->operator_name, "who (default $SUDO_USER or $USER @ host)");
    force->add_flag("--even-if-active", a->even_if_active, "delete even if renewed within the last lease period");
    force->callback([&p, a, force] { p.run = [&p, a, force] { return run_force_release(p.globals, *a, *force); }; });

    auto* audit = p.app.add_subcommand("audit", "audited manual interventions, newest first: a table, or JSON lines");
    audit->add_option("--resource", a->resource, "only this resource");
    audit->add_option("--limit", a->limit, "at most this many (default 1000)");
    add_format_flags(*audit, a->format);
    audit->callback([&p, a, audit] { p.run = [&p, a, audit] { return run_audit(p.globals, *a, *audit); }; });
}

}  // namespace fencelock::cli
