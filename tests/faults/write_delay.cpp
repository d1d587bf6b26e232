#include "faults/write_delay.hpp"

#include <condition_variable>
#include <mutex>

#include "faults/fault_proxy.hpp"
#include "faults/postgres_db.hpp"
#include "faults/store_target.hpp"

namespace fencelock::faults {
namespace {

// Holds write() calls at a gate the test opens; reads pass.
class GatedTarget final : public Target, public WriteDelay {
public:
    explicit GatedTarget(std::unique_ptr<Target> inner) : inner_(std::move(inner)) {}

    Target& target() override { return *this; }
    void hold() override {
        std::lock_guard lock(m_);
        closed_ = true;
    }
    bool holding() override {
        std::lock_guard lock(m_);
        return waiting_ > 0;
    }
    void release() override {
        {
            std::lock_guard lock(m_);
            closed_ = false;
        }
        cv_.notify_all();
    }
    std::string how() const override { return "gate"; }

    bool fencing() const override { return inner_->fencing(); }
    std::string read(const std::string& resource) override { return inner_->read(resource); }
    std::uint64_t last_fence(const std::string& resource) override { return inner_->last_fence(resource); }
    TargetWrite write(const std::string& resource, const std::string& value, std::uint64_t fence,
                      const std::string& key) override {
        {
            std::unique_lock lock(m_);
            ++waiting_;
            cv_.wait(lock, [&] { return !closed_; });
            --waiting_;
        }
        return inner_->write(resource, value, fence, key);
    }
    std::vector<AcceptedWrite> accepted() override { return inner_->accepted(); }

private:
    std::unique_ptr<Target> inner_;
    std::mutex m_;
    std::condition_variable cv_;
    bool closed_ = false;
    int waiting_ = 0;
};

// The worker's store connection runs through a fault proxy in front of PostgreSQL.
class ProxiedStore final : public WriteDelay {
public:
    ProxiedStore(const std::string& url, bool fencing)
        : proxy_(port_of(url)), target_(StoreTarget::open(with_port(url, proxy_.port()), fencing)) {}

    Target& target() override { return *target_; }
    void hold() override { proxy_.hold_requests(); }
    bool holding() override { return proxy_.counters().held_up > 0; }
    void release() override { proxy_.pass(); }
    std::string how() const override { return "proxy"; }

private:
    FaultProxy proxy_;
    std::unique_ptr<StoreTarget> target_;
};

}  // namespace

std::unique_ptr<WriteDelay> make_write_delay(Backend backend, bool fencing, const std::string& location) {
    if (backend == Backend::postgres) return std::make_unique<ProxiedStore>(location, fencing);
    return std::make_unique<GatedTarget>(open_target(target_spec(fencing, location)));
}

}  // namespace fencelock::faults
