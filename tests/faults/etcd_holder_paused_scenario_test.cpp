// The paused holder on etcd (paused_holder.hpp): a holder process frozen with SIGSTOP past its
// 2 s lease, between its last validity check and its write. etcd expires the lease, another
// holder takes over with a later revision as its fence and writes; then the frozen one resumes
// and writes with its old fence. Fenced: the target rejects the stale write. Unfenced (the
// negative control): it overwrites the newer owner's append, and the checker says so.
#include "faults/paused_holder.hpp"
#include "local_servers/etcd_server.hpp"

namespace fencelock::faults {
namespace {

using namespace std::chrono_literals;

class EtcdHolderPaused : public PausedHolder {
protected:
    void SetUp() override {
        PausedHolder::SetUp();
        etcd = std::make_unique<local::EtcdServer>();
    }
    std::unique_ptr<local::EtcdServer> etcd;
};

TEST_P(EtcdHolderPaused, StaleWriteAfterTheLeaseIsRejectedOnlyWithFencing) {
    run_case({.scenario = "etcd_holder_paused", .url = etcd->url(), .lease = 2s, .coordinator = "etcd"});
}

INSTANTIATE_TEST_SUITE_P(Faults, EtcdHolderPaused, ::testing::ValuesIn(all_backends()), mode_name);

}  // namespace
}  // namespace fencelock::faults
