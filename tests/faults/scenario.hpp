#pragma once
// Shared ground of the fault scenarios: a private redis-server, a target (see target.hpp) on
// the backend under test, the history files, recorded acquisitions, the verdict and the
// summary line.
//
// Every scenario is a TEST_P over a Mode: the backend of the target (file register, SQLite or
// PostgreSQL FencedStore) and `fencing` (true: the protection under test is on and the checker
// must find nothing; false: the negative control, the protection is off - the target's fence
// check always (StoreOptions::enforce_fencing = false for the stores), plus whatever else the
// scenario's header names - and the checker must find at least one violation, which proves it
// can see one). The scenarios only talk to Target, so one body runs on every
// backend; which backends each scenario runs on is chosen below (all_backends / no_postgres).
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "faults/fault_history.hpp"
#include "faults/linearizability.hpp"
#include "faults/target.hpp"
#include "faults/worker.hpp"
#include "fencelock/client.hpp"
#include "local_servers/redis_server.hpp"
#include "support/eventually.hpp"

namespace fencelock::faults {

/// One machine-readable line per scenario run, collected later into docs/RELIABILITY.md:
/// `FAULT-SUMMARY {"scenario":"...","backend":"sqlite","fencing":true,"violations":0,...}`.
class Summary {
public:
    Summary(std::string scenario, Backend backend, bool fencing);
    Summary& add(const std::string& key, std::int64_t value);
    Summary& add(const std::string& key, const std::string& value);
    Summary& flag(const std::string& key, bool value);
    /// violations, stale_accepted and the count per property.
    Summary& report(const Report& r);
    /// v_linearizability (resources not linearizable), linearizable_resources and
    /// linearizability_inconclusive.
    Summary& linearizability(const LinearizabilityReport& r);
    /// Prints the line on stdout.
    void print() const;

private:
    std::vector<std::pair<std::string, std::string>> fields_;  // key, JSON text
};

/// What one run of a scenario writes to, and whether its protection is on.
struct Mode {
    Backend backend = Backend::file;
    bool fencing = true;
};
void PrintTo(const Mode& mode, std::ostream* os);

/// Both fencing modes on each backend.
std::vector<Mode> modes(std::initializer_list<Backend> backends);
/// Scenarios where the target's check decides the outcome run on every backend.
std::vector<Mode> all_backends();
/// Scenarios about the lock protocol itself (release, renewal, Redis pauses, a lost reply,
/// Redis down, starvation) skip PostgreSQL: the store only checks a fence there, which the
/// scenarios on all_backends() already put through PostgreSQL, and each PostgreSQL case costs
/// a database of its own. SQLite keeps every one of them on a real store.
std::vector<Mode> no_postgres();
/// Queue scenarios need a FencedStore: SQLite and PostgreSQL.
std::vector<Mode> stores_only();

/// "sqlite_fenced", "file_unfenced", ... for test names.
std::string mode_name(const ::testing::TestParamInfo<Mode>& info);

/// The lease obtained by a recorded acquisition.
std::optional<Lease> record_acquire(Recorder& recorder, const std::string& resource,
                                    const std::function<Result<Acquisition>()>& attempt);

/// True while the local safe-until deadline of a plain lease has not passed.
bool still_valid(const Lease& lease);

class ScenarioTest : public ::testing::TestWithParam<Mode> {
protected:
    void SetUp() override;
    void TearDown() override;

    bool fencing() const { return GetParam().fencing; }
    Backend backend() const { return GetParam().backend; }
    /// The summary line of this run (scenario, backend, fencing).
    Summary summary(const std::string& scenario) const { return Summary(scenario, backend(), fencing()); }
    /// How a child process opens this test's target (open_target).
    std::string target_spec() const { return faults::target_spec(fencing(), target_location); }
    /// A client of the test's redis-server, or of `url` (a fault proxy).
    LockClient client(ClientOptions options = {}, const std::string& url = {});
    /// A recorder writing `name`'s ops into the history directory.
    std::unique_ptr<Recorder> recorder(const std::string& name);
    /// Ops of every recorder and child process, the target's log and final values.
    History history();
    /// Checks the history and prints every violation found. Also runs the linearizability
    /// check (linearizability.hpp) on the same history, leaving out the holds that
    /// options.not_replicated leaves out of exclusion, keeps its report in `lin` and prints
    /// its headline and findings.
    Report check_history(const CheckOptions& options = {});
    /// Fenced: no violation, of `report` or of `lin` (each one is a test failure). Unfenced: at
    /// least one in `report`; what `lin` found is printed, and asserted only where a scenario
    /// calls expect_linearizability_caught().
    void expect_verdict(const Report& report);
    /// Unfenced only (no-op when fenced): `lin` flags at least one resource. For the negative
    /// controls whose violation is one the models can see: a stale write accepted, a lost
    /// update, overlapping holds, an element applied twice.
    void expect_linearizability_caught();
    /// True once Redis holds no lease for `resource`.
    bool lock_gone(LockClient& c, const std::string& resource);
    /// After SIGKILL: the ops `process` left open may or may not have taken effect. Records
    /// them as unknown in its history file, as a supervisor that saw the crash would.
    void mark_killed(const std::string& process);

    std::filesystem::path dir;
    std::filesystem::path history_dir;
    /// The FileRegister directory or the database URL.
    std::string target_location;
    std::unique_ptr<local::RedisServer> redis;
    std::unique_ptr<Target> target;
    /// The linearizability check of the last check_history().
    LinearizabilityReport lin;
};

ResourceName res(const std::string& name);

}  // namespace fencelock::faults
