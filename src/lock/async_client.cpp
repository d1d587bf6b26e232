// AsyncLockClient: each operation is a job on the runner threads (lock/async_runners.hpp) that
// calls the synchronous LockClient, so the async API shares every rule of the sync path.
#include "fencelock/async_client.hpp"

#include <stop_token>
#include <system_error>

#include "lock/async_runners.hpp"
#include "lock/client_impl.hpp"

namespace fencelock {

std::expected<void, OptionError> AsyncOptions::validate() const {
    if (runners == 0) return std::unexpected(OptionError{"runners", "must be at least 1"});
    return {};
}

struct AsyncLockClient::Impl {
    Impl(LockClient c, std::size_t runners) : client(std::move(c)), runners(runners) {}
    ~Impl() {
        stop.request_stop();  // ends the waits of acquisitions under way
        runners.close();
    }

    // Queues `work` (LockClient& -> Result<T>). A result that comes after destruction began
    // is reported cancelled, and `give_back` undoes what it got (a lease).
    template <typename T, typename Work, typename GiveBack>
    void submit(Callback<T> done, Work work, GiveBack give_back) {
        runners.post([this, done = std::move(done), work = std::move(work),
                      give_back = std::move(give_back)](bool closing) mutable {
            if (closing || closing_now()) return done(cancelled());
            Result<T> result = work(client, stop.get_token());
            if (closing_now()) {
                if (result) give_back(client, *result);
                return done(cancelled());
            }
            done(std::move(result));
        });
    }

    // Stop is requested before the runners close: a wait it ended (no lease, no error) must
    // still report cancelled, and a job taken in between must not start its work.
    bool closing_now() const { return stop.stop_requested() || runners.closing(); }

    static std::unexpected<std::error_code> cancelled() {
        return std::unexpected(std::make_error_code(std::errc::operation_canceled));
    }

    LockClient client;
    std::stop_source stop;
    detail::AsyncRunners runners;  // last: its threads end before the client they use
};

namespace {
// An acquisition that came too late for its caller: the lease goes back at once.
void give_back_acquisition(LockClient& client, Acquisition& got) {
    if (got.acquired()) (void)client.release(got.lease->resource, got.lease->owner);
}
void nothing_to_give_back(LockClient&, const auto&) {}
}  // namespace

std::expected<AsyncLockClient, OptionError> AsyncLockClient::create(ClientOptions options, AsyncOptions async) {
    if (auto ok = async.validate(); !ok) return std::unexpected(ok.error());
    auto client = LockClient::create(std::move(options));
    if (!client) return std::unexpected(client.error());
    return AsyncLockClient(std::make_unique<Impl>(std::move(*client), async.runners));
}

AsyncLockClient::AsyncLockClient(std::unique_ptr<Impl> impl) noexcept : impl_(std::move(impl)) {}
AsyncLockClient::AsyncLockClient(AsyncLockClient&&) noexcept = default;
AsyncLockClient& AsyncLockClient::operator=(AsyncLockClient&&) noexcept = default;
AsyncLockClient::~AsyncLockClient() = default;

LockClient& AsyncLockClient::sync() noexcept { return impl_->client; }

void AsyncLockClient::try_acquire(const ResourceName& resource, const AcquireOptions& options,
                                  Callback<Acquisition> done) {
    detail::require_valid(options, impl_->client.options().command_timeout);
    impl_->submit<Acquisition>(
        std::move(done), [resource, options](LockClient& c, std::stop_token) { return c.try_acquire(resource, options); },
        give_back_acquisition);
}

void AsyncLockClient::acquire(const ResourceName& resource, const AcquireOptions& options,
                              Callback<Acquisition> done) {
    detail::require_valid(options, impl_->client.options().command_timeout);
    impl_->submit<Acquisition>(
        std::move(done),
        [resource, options](LockClient& c, std::stop_token stop) { return c.acquire(resource, options, stop); },
        give_back_acquisition);
}

void AsyncLockClient::renew(const ResourceName& resource, const OwnerToken& owner, milliseconds lease,
                            Callback<Renewal> done) {
    detail::require_valid_lease(lease);
    impl_->submit<Renewal>(
        std::move(done),
        [resource, owner, lease](LockClient& c, std::stop_token) { return c.renew(resource, owner, lease); },
        nothing_to_give_back<Renewal>);
}

void AsyncLockClient::release(const ResourceName& resource, const OwnerToken& owner, Callback<ReleaseStatus> done) {
    impl_->submit<ReleaseStatus>(
        std::move(done), [resource, owner](LockClient& c, std::stop_token) { return c.release(resource, owner); },
        nothing_to_give_back<ReleaseStatus>);
}

void AsyncLockClient::hold(const ResourceName& resource, const AcquireOptions& options, KeepOptions keep,
                           Callback<Holding> done) {
    detail::require_valid(keep, options, impl_->client.options());
    impl_->submit<Holding>(
        std::move(done),
        [resource, options, keep = std::move(keep)](LockClient& c, std::stop_token stop) {
            return c.hold(resource, options, keep, stop);
        },
        [](LockClient&, Holding& got) { got.lease.reset(); });  // a HeldLease releases when destroyed
}

}  // namespace fencelock
