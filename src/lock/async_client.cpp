// AsyncLockClient: checks each operation's arguments and hands it to the driver chosen when the
// client was created (lock/async_driver.hpp): the coordinator's event loop when it can run one
// (one Redis server or a Sentinel-managed master), else runner threads calling the synchronous
// LockClient (a Redis Cluster). Both share LockClient's rules through ClientCore.
#include "fencelock/async_client.hpp"

#include "lock/async_driver.hpp"
#include "lock/client_core.hpp"
#include "lock/client_gate.hpp"
#include "lock/client_results.hpp"

namespace fencelock {

std::expected<void, OptionError> AsyncOptions::validate() const {
    if (runners == 0) return std::unexpected(OptionError{"runners", "must be at least 1"});
    return {};
}

namespace {
AcquireOptions single_attempt(AcquireOptions options) {
    options.wait = milliseconds::zero();
    return options;
}

// The coordinator's event loop when it runs one for an asynchronous client, else runners.
std::unique_ptr<detail::AsyncDriver> driver_for(LockClient& client, std::size_t runners) {
    auto& core = detail::ClientGate::core(client);
    if (core.coordinator->capabilities().async_loop)
        if (auto session = core.coordinator->async_session()) return detail::make_loop_driver(core, std::move(session));
    return detail::make_runner_driver(client, runners);
}
}  // namespace

struct AsyncLockClient::Impl {
    Impl(LockClient c, std::size_t runners) : client(std::move(c)), driver(driver_for(client, runners)) {}
    ~Impl() { driver->close(); }

    LockClient client;
    std::unique_ptr<detail::AsyncDriver> driver;  // last: it ends before the client it uses
};

std::expected<AsyncLockClient, OptionError> AsyncLockClient::create(ClientOptions options, AsyncOptions async) {
    if (auto ok = async.validate(); !ok) return std::unexpected(ok.error());
    auto client = LockClient::create(std::move(options));
    if (!client) return std::unexpected(client.error());
    return AsyncLockClient(std::make_unique<Impl>(std::move(*client), async.runners));
}

AsyncLockClient::AsyncLockClient(std::unique_ptr<Impl> impl) noexcept : impl_(std::move(impl)) {}
AsyncLockClient::AsyncLockClient(AsyncLockClient&&) noexcept = default;
AsyncLockClient& AsyncLockClient::operator=(AsyncLockClient&&) noexcept = default;
AsyncLockClient::~AsyncLockClient() {
    // Before impl_ goes: a callback may still call into this client (it completes cancelled).
    if (impl_) impl_->driver->close();
}

LockClient& AsyncLockClient::sync() noexcept { return impl_->client; }

void AsyncLockClient::try_acquire(const ResourceName& resource, const AcquireOptions& options,
                                  Callback<Acquisition> done) {
    acquire(resource, single_attempt(options), std::move(done));
}

void AsyncLockClient::acquire(const ResourceName& resource, const AcquireOptions& options, Callback<Acquisition> done) {
    detail::require_valid(options, impl_->client.options().command_timeout);
    detail::require_supported(options, detail::ClientGate::core(impl_->client).coordinator->capabilities());
    impl_->driver->acquire(resource, options, std::move(done));
}

void AsyncLockClient::renew(const ResourceName& resource, const OwnerToken& owner, milliseconds lease,
                            Callback<Renewal> done) {
    detail::require_valid_lease(lease);
    impl_->driver->renew(resource, owner, lease, std::move(done));
}

void AsyncLockClient::release(const ResourceName& resource, const OwnerToken& owner, Callback<ReleaseStatus> done) {
    impl_->driver->release(resource, owner, std::move(done));
}

void AsyncLockClient::hold(const ResourceName& resource, const AcquireOptions& options, KeepOptions keep,
                           Callback<Holding> done) {
    detail::require_valid(keep, options, impl_->client.options());
    detail::require_supported(options, detail::ClientGate::core(impl_->client).coordinator->capabilities());
    impl_->driver->hold(resource, options, std::move(keep), std::move(done));
}

}  // namespace fencelock
