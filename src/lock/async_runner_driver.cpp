// AsyncLockClient where the coordinator runs no event loop for it (a Redis Cluster, whose
// redirects and per-node connections are the blocking connection's): each operation is a job
// on the runner threads (lock/async_runners.hpp) that calls the synchronous LockClient, then
// the callback, with the queue's lock released.
#include <stop_token>

#include "lock/async_driver.hpp"
#include "lock/async_runners.hpp"

namespace fencelock::detail {
namespace {

// An acquisition that came too late for its caller: the lease goes back at once.
void give_back_acquisition(LockClient& client, Acquisition& got) {
    if (got.acquired()) (void)client.release(got.lease->resource, got.lease->owner);
}
void nothing_to_give_back(LockClient&, const auto&) {}

class RunnerDriver final : public AsyncDriver {
public:
    RunnerDriver(LockClient& client, std::size_t threads) : client_(client), runners_(threads) {}
    ~RunnerDriver() override { close(); }

    void close() override {
        stop_.request_stop();  // ends the waits of acquisitions under way
        runners_.close();
    }

    void acquire(const ResourceName& resource, const AcquireOptions& options, Callback<Acquisition> done) override {
        submit<Acquisition>(
            std::move(done),
            [resource, options](LockClient& c, std::stop_token stop) { return c.acquire(resource, options, stop); },
            give_back_acquisition);
    }

    void renew(const ResourceName& resource, const OwnerToken& owner, milliseconds lease,
               Callback<Renewal> done) override {
        submit<Renewal>(
            std::move(done),
            [resource, owner, lease](LockClient& c, std::stop_token) { return c.renew(resource, owner, lease); },
            nothing_to_give_back<Renewal>);
    }

    void release(const ResourceName& resource, const OwnerToken& owner, Callback<ReleaseStatus> done) override {
        submit<ReleaseStatus>(
            std::move(done), [resource, owner](LockClient& c, std::stop_token) { return c.release(resource, owner); },
            nothing_to_give_back<ReleaseStatus>);
    }

    void hold(const ResourceName& resource, const AcquireOptions& options, KeepOptions keep,
              Callback<Holding> done) override {
        submit<Holding>(
            std::move(done),
            [resource, options, keep = std::move(keep)](LockClient& c, std::stop_token stop) {
                return c.hold(resource, options, keep, stop);
            },
            [](LockClient&, Holding& got) { got.lease.reset(); });  // a HeldLease releases when destroyed
    }

private:
    // Queues `work` (LockClient& -> Result<T>). A result that comes after destruction began is
    // reported cancelled, and `give_back` undoes what it got (a lease).
    template <typename T, typename Work, typename GiveBack>
    void submit(Callback<T> done, Work work, GiveBack give_back) {
        runners_.post([this, done = std::move(done), work = std::move(work),
                       give_back = std::move(give_back)](bool closing) mutable {
            if (closing || closing_now()) return done(cancelled());
            Result<T> result = work(client_, stop_.get_token());
            if (closing_now()) {
                if (result) give_back(client_, *result);
                return done(cancelled());
            }
            done(std::move(result));
        });
    }

    // Stop is requested before the runners close: a wait it ended (no lease, no error) must
    // still report cancelled, and a job taken in between must not start its work.
    bool closing_now() const { return stop_.stop_requested() || runners_.closing(); }

    LockClient& client_;
    std::stop_source stop_;
    AsyncRunners runners_;  // last: its threads end before the rest goes
};

}  // namespace

std::unique_ptr<AsyncDriver> make_runner_driver(LockClient& client, std::size_t threads) {
    return std::make_unique<RunnerDriver>(client, threads);
}

}  // namespace fencelock::detail
