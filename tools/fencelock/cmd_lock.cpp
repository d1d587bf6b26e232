// acquire / renew / release / inspect: one script call each, one JSON object out.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <iostream>
#include <memory>

#include "cli.hpp"
#include "replica_flags.hpp"

namespace fencelock::cli {
namespace {

using nlohmann::json;

struct AcquireArgs {
    std::string resource, lease, wait, owner, max_hold;
    ReplicaFlags replicas;
};

int run_acquire(const Globals& g, const AcquireArgs& a, const CLI::App& cmd) {
    const auto resource = parse_resource(a.resource);
    AcquireOptions options = parse_acquire_options(cmd, a.lease, a.wait, a.max_hold);
    apply_replica_flags(cmd, a.replicas, g, options);
    const auto owner = cmd.count("--owner") ? parse_owner(a.owner) : OwnerToken::generate();
    auto client = make_client(g);
    require_supported(client, options);

    auto result = client.acquire(resource, owner, options);
    if (!result) return redis_failure(result.error());
    if (!result->acquired()) {
        emit({{"acquired", false},
              {"resource", resource.str()},
              {"result", "contended"},
              {"pttl_ms", result->holder_ttl.count()},
              {"attempts", result->attempts}});
        return exit_negative;
    }
    const Lease& lease = *result->lease;
    emit({{"acquired", true},
          {"result", "acquired"},
          {"resource", resource.str()},
          {"owner", lease.owner.str()},
          {"fence", lease.fence.value()},
          {"lease_ms", lease.ttl.count()},
          {"reacquired", lease.reacquired},
          {"attempts", result->attempts}});
    return exit_ok;
}

int run_renew(const Globals& g, const std::string& r, const std::string& owner_text, const std::string& lease_text) {
    const auto resource = parse_resource(r);
    const auto owner = parse_owner(owner_text);
    const auto lease = parse_duration_flag("--lease", lease_text);
    if (auto ok = validate_lease(lease); !ok) throw InputError{"--lease", ok.error().message};
    auto client = make_client(g);
    auto result = client.renew(resource, owner, lease);
    if (!result) return redis_failure(result.error());
    if (result->status != RenewStatus::renewed) {
        json out{{"renewed", false}, {"resource", resource.str()}, {"result", to_string(result->status)}};
        if (result->fence) out["fence"] = result->fence->value();
        emit(out);
        return exit_negative;
    }
    emit({{"renewed", true},
          {"result", "renewed"},
          {"resource", resource.str()},
          {"fence", result->fence->value()},
          {"lease_ms", result->ttl.count()}});
    return exit_ok;
}

int run_release(const Globals& g, const std::string& r, const std::string& owner_text) {
    const auto resource = parse_resource(r);
    const auto owner = parse_owner(owner_text);
    auto client = make_client(g);
    auto result = client.release(resource, owner);
    if (!result) return redis_failure(result.error());
    if (*result != ReleaseStatus::released) {
        emit({{"released", false}, {"resource", resource.str()}, {"result", to_string(*result)}});
        return exit_negative;
    }
    emit({{"released", true}, {"result", "released"}, {"resource", resource.str()}});
    return exit_ok;
}

/// inspect's record for people, from the JSON a script gets.
void print_inspected(const json& out) {
    std::vector<std::pair<std::string, std::string>> fields{{"resource", out["resource"]}};
    if (!out["held"].get<bool>()) {
        fields.emplace_back("held", "no");
    } else {
        const auto ms = [&](const char* key) { return human_duration(out[key].get<std::int64_t>()); };
        const json& h = out["holder"];
        const std::string label = h["label"].get<std::string>();
        const long renewals = out["renewals"].get<long>();
        fields.insert(
            fields.end(),
            {{"held", "yes, by " + (label.empty() ? std::string() : label + " on ") + h["host"].get<std::string>() +
                          " (pid " + std::to_string(h["pid"].get<std::int64_t>()) + ")"},
             {"owner", out["owner"]},
             {"fence", std::to_string(out["fence"].get<std::uint64_t>())},
             {"expires in", ms("pttl_ms") + " (lease " + ms("lease_ms") + ")"},
             {"held for", ms("held_for_ms")},
             {"last renewal", renewals == 0 ? std::string("never")
                                            : ms("since_renew_ms") + " ago (" + std::to_string(renewals) +
                                                  (renewals == 1 ? " renewal)" : " renewals)")},
             {"max hold left", ms("max_hold_left_ms")}});
    }
    fields.emplace_back("last fence", std::to_string(out["last_fence"].get<std::uint64_t>()));
    if (out.contains("server_clock_offset_ms"))
        fields.emplace_back("server clock",
                            human_duration(out["server_clock_offset_ms"].get<std::int64_t>()) + " from this host's");
    if (out.contains("tls_insecure")) fields.emplace_back("tls", "NOT VERIFIED (tls_insecure)");
    print_fields(std::cout, fields);
}

int run_inspect(const Globals& g, const std::string& r, const FormatFlags& format) {
    const auto resource = parse_resource(r);
    auto client = make_client(g);
    const auto sent = std::chrono::system_clock::now();
    auto result = client.inspect(resource);
    const auto received = std::chrono::system_clock::now();
    if (!result) return redis_failure(result.error());
    // Server minus this host, against the middle of the round trip (TIME was read inside it).
    const auto offset =
        std::chrono::duration_cast<std::chrono::milliseconds>(result->server_time - (sent + (received - sent) / 2));
    json out{
        {"resource", resource.str()}, {"held", result->holder.has_value()}, {"last_fence", result->last_fence.value()}};
    // etcd has no clock to read (server_time stays the epoch): no offset to show.
    if (result->server_time != std::chrono::system_clock::time_point{}) out["server_clock_offset_ms"] = offset.count();
    if (const auto& h = result->holder) {
        out.update({{"owner", h->owner},
                    {"fence", h->fence.value()},
                    {"pttl_ms", h->ttl.count()},
                    {"lease_ms", h->lease.count()},
                    {"held_for_ms", h->held_for.count()},
                    {"since_renew_ms", h->since_renew.count()},
                    {"renewals", h->renewals},
                    {"max_hold_left_ms", h->max_hold_left.count()},
                    {"holder", {{"host", h->host}, {"pid", h->pid}, {"label", h->label}}}});
    }
    if (tls_insecure(g)) out["tls_insecure"] = true;
    if (chosen_format(format) == Format::json) emit(out);
    else print_inspected(out);
    return exit_ok;
}

}  // namespace

void register_lock_commands(Program& p) {
    auto acquire = std::make_shared<AcquireArgs>();
    auto* cmd = p.app.add_subcommand("acquire", "take the lease of RESOURCE and print its fencing token");
    cmd->add_option("resource", acquire->resource, "resource name")->required();
    cmd->add_option("--lease", acquire->lease, "lease length, e.g. 30s")->required();
    cmd->add_option("--wait", acquire->wait, "keep trying this long (default: one attempt)");
    cmd->add_option("--owner", acquire->owner, "owner token to use (retry after a lost reply)");
    cmd->add_option("--max-hold", acquire->max_hold, "renewals refused after this (default max(1h, lease))");
    add_replica_flags(*cmd, acquire->replicas);
    cmd->callback(
        [&p, acquire, cmd] { p.run = [&p, acquire, cmd] { return run_acquire(p.globals, *acquire, *cmd); }; });

    auto renew = std::make_shared<std::array<std::string, 3>>();
    cmd = p.app.add_subcommand("renew", "extend a lease held by OWNER");
    cmd->add_option("resource", (*renew)[0], "resource name")->required();
    cmd->add_option("--owner", (*renew)[1], "owner token from acquire")->required();
    cmd->add_option("--lease", (*renew)[2], "new lease length from now")->required();
    cmd->callback(
        [&p, renew] { p.run = [&p, renew] { return run_renew(p.globals, (*renew)[0], (*renew)[1], (*renew)[2]); }; });

    auto release = std::make_shared<std::array<std::string, 2>>();
    cmd = p.app.add_subcommand("release", "delete the lock if OWNER still holds it");
    cmd->add_option("resource", (*release)[0], "resource name")->required();
    cmd->add_option("--owner", (*release)[1], "owner token from acquire")->required();
    cmd->callback(
        [&p, release] { p.run = [&p, release] { return run_release(p.globals, (*release)[0], (*release)[1]); }; });

    struct InspectArgs {
        std::string resource;
        FormatFlags format;
    };
    auto inspect = std::make_shared<InspectArgs>();
    cmd = p.app.add_subcommand("inspect", "show the holder, TTL and last fence of RESOURCE");
    cmd->add_option("resource", inspect->resource, "resource name")->required();
    add_format_flags(*cmd, inspect->format);
    cmd->callback([&p, inspect] {
        p.run = [&p, inspect] { return run_inspect(p.globals, inspect->resource, inspect->format); };
    });
}

}  // namespace fencelock::cli
