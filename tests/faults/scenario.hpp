#pragma once
// Shared ground of the fault scenarios: a private redis-server, a private directory holding
// the target and the history files, recorded acquisitions, the verdict and the summary line.
//
// Every scenario is a TEST_P over `fencing` (true: the protection under test is on and the
// checker must find nothing; false: the negative control, the protection is off and the
// checker must find at least one violation, which proves it can see one).
//
// Plugging in a real store later: implement faults::Target over fencelock::FencedStore
// (read -> the record's value, write -> FencedStore::write with the fence and the element as
// idempotency key, applied/stale/duplicate mapped one to one; accepted -> a log the adapter
// keeps of applied results, or a table the store fills in the same transaction), and make
// ScenarioTest::make_target() return it for a second parameter value. The scenarios only talk
// to Target, so they run unchanged against SQLite and PostgreSQL.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "faults/history.hpp"
#include "faults/target.hpp"
#include "faults/worker.hpp"
#include "fencelock/client.hpp"
#include "support/eventually.hpp"
#include "support/redis_server.hpp"

namespace fencelock::faults {

/// One machine-readable line per scenario run, collected later into docs/RELIABILITY.md:
/// `FAULT-SUMMARY {"scenario":"...","fencing":true,"violations":0,"stale_accepted":0,...}`.
class Summary {
public:
    Summary(std::string scenario, bool fencing);
    Summary& add(const std::string& key, std::int64_t value);
    Summary& add(const std::string& key, const std::string& value);
    Summary& flag(const std::string& key, bool value);
    /// violations, stale_accepted and the count per property.
    Summary& report(const Report& r);
    /// Prints the line on stdout.
    void print() const;

private:
    std::vector<std::pair<std::string, std::string>> fields_;  // key, JSON text
};

/// "fenced" / "unfenced", for test names.
std::string mode_name(const ::testing::TestParamInfo<bool>& info);

/// The lease obtained by a recorded acquisition.
std::optional<Lease> record_acquire(Recorder& recorder, const std::string& resource,
                                    const std::function<Result<Acquisition>()>& attempt);

/// True while the local safe-until deadline of a plain lease has not passed.
bool still_valid(const Lease& lease);

class ScenarioTest : public ::testing::TestWithParam<bool> {
protected:
    void SetUp() override;
    void TearDown() override;

    bool fencing() const { return GetParam(); }
    /// A client of the test's redis-server, or of `url` (a fault proxy).
    LockClient client(ClientOptions options = {}, const std::string& url = {});
    /// A recorder writing `name`'s ops into the history directory.
    std::unique_ptr<Recorder> recorder(const std::string& name);
    /// Ops of every recorder and child process, the target's log and final values.
    History history();
    /// Checks the history and prints every violation found.
    Report check_history(const CheckOptions& options = {});
    /// Fenced: no violation (each one is a test failure). Unfenced: at least one.
    void expect_verdict(const Report& report);
    /// True once Redis holds no lease for `resource`.
    bool lock_gone(LockClient& c, const std::string& resource);

    std::filesystem::path dir;
    std::filesystem::path history_dir;
    std::filesystem::path target_dir;
    std::unique_ptr<testing::RedisServer> redis;
    std::unique_ptr<Target> target;
};

ResourceName res(const std::string& name);

}  // namespace fencelock::faults
