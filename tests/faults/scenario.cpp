#include "faults/scenario.hpp"

#include <cstdio>
#include <cstdlib>

#include "faults/json_lines.hpp"
#include "faults/postgres_db.hpp"
#include "faults/store_target.hpp"

namespace fencelock::faults {

Summary::Summary(std::string scenario, Backend backend, bool fencing) {
    fields_.emplace_back("scenario", json_quote(scenario));
    fields_.emplace_back("backend", json_quote(to_string(backend)));
    fields_.emplace_back("fencing", fencing ? "true" : "false");
}

Summary& Summary::add(const std::string& key, std::int64_t value) {
    fields_.emplace_back(key, std::to_string(value));
    return *this;
}

Summary& Summary::add(const std::string& key, const std::string& value) {
    fields_.emplace_back(key, json_quote(value));
    return *this;
}

Summary& Summary::flag(const std::string& key, bool value) {
    fields_.emplace_back(key, value ? "true" : "false");
    return *this;
}

Summary& Summary::report(const Report& r) {
    add("violations", static_cast<std::int64_t>(r.total()));
    add("stale_accepted", static_cast<std::int64_t>(r.stale_accepted));
    add("v_fence_order", static_cast<std::int64_t>(r.fence_order.size()));
    add("v_exclusion", static_cast<std::int64_t>(r.exclusion.size()));
    add("v_final_state", static_cast<std::int64_t>(r.final_state.size()));
    add("v_idempotency", static_cast<std::int64_t>(r.idempotency.size()));
    add("v_completion", static_cast<std::int64_t>(r.completion.size()));
    return *this;
}

Summary& Summary::linearizability(const LinearizabilityReport& r) {
    add("v_linearizability", static_cast<std::int64_t>(r.count(LinVerdict::violation)));
    add("linearizable_resources", static_cast<std::int64_t>(r.count(LinVerdict::ok)));
    add("linearizability_inconclusive", static_cast<std::int64_t>(r.count(LinVerdict::inconclusive)));
    return *this;
}

void Summary::print() const {
    std::string line = "FAULT-SUMMARY {";
    for (std::size_t i = 0; i < fields_.size(); ++i) {
        if (i > 0) line += ',';
        line += json_quote(fields_[i].first) + ':' + fields_[i].second;
    }
    std::printf("%s}\n", line.c_str());
    std::fflush(stdout);
}

void PrintTo(const Mode& mode, std::ostream* os) {
    *os << to_string(mode.backend) << (mode.fencing ? " fenced" : " unfenced");
}

std::vector<Mode> modes(std::initializer_list<Backend> backends) {
    std::vector<Mode> out;
    for (Backend b : backends)
        for (bool fencing : {true, false}) out.push_back({b, fencing});
    return out;
}

std::vector<Mode> all_backends() { return modes({Backend::file, Backend::sqlite, Backend::postgres}); }
std::vector<Mode> no_postgres() { return modes({Backend::file, Backend::sqlite}); }
std::vector<Mode> stores_only() { return modes({Backend::sqlite, Backend::postgres}); }

std::string mode_name(const ::testing::TestParamInfo<Mode>& info) {
    return std::string(to_string(info.param.backend)) + (info.param.fencing ? "_fenced" : "_unfenced");
}

ResourceName res(const std::string& name) { return *ResourceName::make(name); }

std::optional<Lease> record_acquire(Recorder& recorder, const std::string& resource,
                                    const std::function<Result<Acquisition>()>& attempt) {
    const auto id = recorder.invoke(OpKind::acquire, resource);
    auto got = attempt();
    if (!got) {
        // Unknown: Redis may have granted it; certain failure otherwise (fail closed).
        const bool unknown = classify(got.error()) == failure_kind::outcome_unknown;
        recorder.complete(id, unknown ? Outcome::unknown : Outcome::fail, 0, {}, got.error().message());
        return std::nullopt;
    }
    if (!got->acquired()) {
        recorder.complete(id, Outcome::fail, 0, {}, "contended");
        return std::nullopt;
    }
    recorder.complete(id, Outcome::ok, got->lease->fence.value(), {}, got->lease->reacquired ? "reacquired" : "");
    return std::move(got->lease);
}

bool still_valid(const Lease& lease) { return std::chrono::steady_clock::now() < lease.safe_until; }

void ScenarioTest::SetUp() {
    char tmpl[] = "/tmp/fencelock-faults-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir = tmpl;
    history_dir = dir / "history";
    std::filesystem::create_directories(history_dir);
    switch (backend()) {
        case Backend::file:
            target_location = (dir / "target").string();
            target = FileRegister::create(target_location, fencing());
            break;
        case Backend::sqlite:
            target_location = "sqlite://" + (dir / "target.db").string();
            target = StoreTarget::create(target_location, fencing());
            break;
        case Backend::postgres:
            target_location = fresh_postgres_database();
            target = StoreTarget::create(target_location, fencing());
            break;
    }
    redis = std::make_unique<local::RedisServer>();
}

void ScenarioTest::TearDown() {
    target.reset();
    redis.reset();
    std::error_code ec;
    if (!HasFailure()) std::filesystem::remove_all(dir, ec);
    else std::printf("history kept in %s (target %s)\n", dir.c_str(), target_location.c_str());
}

LockClient ScenarioTest::client(ClientOptions options, const std::string& url) {
    options.endpoint = *parse_redis_url(url.empty() ? redis->url() : url);
    auto c = LockClient::create(std::move(options));
    if (!c) throw std::invalid_argument("ClientOptions." + c.error().field + ": " + c.error().message);
    return std::move(*c);
}

std::unique_ptr<Recorder> ScenarioTest::recorder(const std::string& name) {
    return std::make_unique<Recorder>(name, history_dir / (name + ".jsonl"));
}

History ScenarioTest::history() { return collect(*target, load_ops(history_dir)); }

Report ScenarioTest::check_history(const CheckOptions& options) {
    History h = history();
    Report r = check(h, options);
    // The first few are enough to see what was caught; a storm without a lock finds hundreds.
    constexpr std::size_t shown = 8;
    const auto all = r.all();
    for (std::size_t i = 0; i < all.size() && i < shown; ++i)
        std::printf("  %s %s\n", fencing() ? "VIOLATION" : "caught", all[i].c_str());
    if (all.size() > shown) std::printf("  ... and %zu more\n", all.size() - shown);

    // Leases known not to have reached the server that took over exclude nobody (see
    // CheckOptions::not_replicated): the mutex model leaves their holds out as exclusion does.
    for (const auto& [from, until] : options.not_replicated) h.ops = without_holds_begun_in(h.ops, from, until);
    lin = check_linearizability(h);
    std::printf("  %s\n", lin.headline().c_str());
    for (const auto& v : lin.violations())
        std::printf("  %s linearizability: %s\n", fencing() ? "VIOLATION" : "caught", v.c_str());
    for (const auto& n : lin.notes()) std::printf("  note linearizability: %s\n", n.c_str());
    return r;
}

void ScenarioTest::expect_verdict(const Report& report) {
    if (fencing()) {
        for (const auto& v : report.all()) ADD_FAILURE() << v;
        for (const auto& v : lin.violations()) ADD_FAILURE() << "linearizability: " << v;
    } else {
        EXPECT_GE(report.total(), 1u) << "negative control: the checker found nothing with the protection off";
    }
}

void ScenarioTest::expect_linearizability_caught() {
    if (fencing()) return;
    EXPECT_GE(lin.count(LinVerdict::violation), 1u)
        << "negative control: the linearizability checker found nothing with the protection off";
}

bool ScenarioTest::lock_gone(LockClient& c, const std::string& resource) {
    auto info = c.inspect(res(resource));
    return info && !info->holder;
}

void ScenarioTest::mark_killed(const std::string& process) {
    const auto file = history_dir / (process + ".jsonl");
    Recorder supervisor(process, file);
    for (const auto& op : load_ops_file(file))
        if (op.outcome == Outcome::invoke && op.kind != OpKind::hold)
            supervisor.complete(op.id, Outcome::unknown, 0, {}, "killed");
}

}  // namespace fencelock::faults
