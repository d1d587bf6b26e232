#include "coordinator/etcd/etcd_release_watch.hpp"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <condition_variable>
#include <map>
#include <mutex>

#include "lease/wait_line.hpp"

namespace fencelock::detail::etcd {

using namespace etcdserverpb;
using WatchStream = grpc::ClientReaderWriter<WatchRequest, WatchResponse>;

namespace {

// One resource this client waits for: its local line and its watch on the stream.
struct Watched {
    KeyRange range;
    WaitLine line;
    std::int64_t watch_id = 0;  // 0: not asked for on the current stream
    bool created = false;       // etcd confirmed it
};

}  // namespace

struct EtcdReleaseWatch::State {
    State(RpcSettings settings, EtcdKeys keys) : rpc(std::move(settings)), keys(std::move(keys)) {}

    EtcdRpc rpc;
    const EtcdKeys keys;
    mutable std::mutex mutex;
    std::condition_variable_any changed;     // waiters and the thread wait on it
    std::map<std::string, Watched> watched;  // by range begin
    std::int64_t next_id = 1;

    // The current stream: writes (creates, cancels) from any thread, reads by the watch thread.
    std::mutex stream_mutex;
    grpc::ClientContext* context = nullptr;
    WatchStream* stream = nullptr;

    // Asks for `w`'s watch on the current stream, if there is one. Under `mutex`.
    void create(Watched& w) {
        w.watch_id = next_id++;
        w.created = false;
        WatchRequest request;
        auto* create = request.mutable_create_request();
        create->set_key(w.range.begin);
        create->set_range_end(w.range.end);
        create->add_filters(WatchCreateRequest::NOPUT);
        create->set_watch_id(w.watch_id);
        write(request);
    }
    void cancel(std::int64_t watch_id) {
        WatchRequest request;
        request.mutable_cancel_request()->set_watch_id(watch_id);
        write(request);
    }
    void write(const WatchRequest& request) {
        std::lock_guard lock(stream_mutex);
        // A failed write means a broken stream: the reader sees it and opens another.
        if (stream != nullptr) (void)stream->Write(request);
    }
    Watched* by_id(std::int64_t id) {
        for (auto& [_, w] : watched)
            if (w.watch_id == id) return &w;
        return nullptr;
    }
};

namespace {

class Seat final : public WatchSeat {
public:
    // Joined by EtcdReleaseWatch::join, under the state's mutex.
    Seat(std::shared_ptr<EtcdReleaseWatch::State> state, std::string key, WaitLine::Ticket ticket)
        : state_(std::move(state)), key_(std::move(key)), ticket_(ticket) {}
    ~Seat() override {
        std::lock_guard lock(state_->mutex);
        auto& w = watched();
        // A wake-up this waiter did not use belongs to the next one; and when the front gives up
        // without the lock, the new front must attempt (as the Redis notifier does).
        const bool unused_wake = w.line.take_wake(ticket_) && !granted_;
        const bool was_front = w.line.ahead(ticket_) == 0;
        w.line.leave(ticket_);
        if (unused_wake) w.line.wake_next();
        else if (was_front && !granted_) w.line.wake_front();
        if (w.line.empty()) {
            if (w.watch_id != 0) state_->cancel(w.watch_id);
            state_->watched.erase(key_);
        }
        state_->changed.notify_all();
    }

    bool subscribed(steady_time until, std::stop_token stop) override {
        std::unique_lock lock(state_->mutex);
        state_->changed.wait_until(lock, stop, until, [&] { return watched().created; });
        return watched().created;
    }
    bool subscribed_now() const override {
        std::lock_guard lock(state_->mutex);
        return state_->watched.at(key_).created;
    }
    std::size_t ahead() const override {
        std::lock_guard lock(state_->mutex);
        return state_->watched.at(key_).line.ahead(ticket_);
    }
    bool wait(steady_time until, std::stop_token stop) override {
        std::unique_lock lock(state_->mutex);
        return state_->changed.wait_until(lock, stop, until, [&] { return watched().line.take_wake(ticket_); });
    }
    std::optional<DirectGrant> take_grant() override { return std::nullopt; }  // etcd makes none
    void pass_on() override {
        std::lock_guard lock(state_->mutex);
        if (watched().line.wake_after(ticket_)) state_->changed.notify_all();
    }
    void granted() noexcept override { granted_ = true; }

private:
    Watched& watched() const { return state_->watched.at(key_); }

    std::shared_ptr<EtcdReleaseWatch::State> state_;
    std::string key_;
    WaitLine::Ticket ticket_ = 0;
    bool granted_ = false;
};

}  // namespace

EtcdReleaseWatch::EtcdReleaseWatch(RpcSettings settings, EtcdKeys keys)
    : state_(std::make_shared<State>(std::move(settings), std::move(keys))),
      thread_([this](std::stop_token stop) { run(stop); }) {}

EtcdReleaseWatch::~EtcdReleaseWatch() {
    thread_.request_stop();
    {
        std::lock_guard lock(state_->stream_mutex);
        if (state_->context != nullptr) state_->context->TryCancel();
    }
    state_->changed.notify_all();
}

std::unique_ptr<WatchSeat> EtcdReleaseWatch::join(const ResourceName& resource, const std::string& owner) {
    const KeyRange range = state_->keys.lock_range(resource);
    std::lock_guard lock(state_->mutex);
    auto [it, added] = state_->watched.try_emplace(range.begin);
    if (added) {
        it->second.range = range;
        state_->create(it->second);
        state_->changed.notify_all();  // the thread may be idle
    }
    return std::make_unique<Seat>(state_, range.begin, it->second.line.join(owner));
}

bool EtcdReleaseWatch::has_waiters(const ResourceName& resource) const {
    std::lock_guard lock(state_->mutex);
    const auto it = state_->watched.find(state_->keys.lock_range(resource).begin);
    return it != state_->watched.end() && !it->second.line.empty();
}

bool EtcdReleaseWatch::watching(const ResourceName& resource) const {
    std::lock_guard lock(state_->mutex);
    const auto it = state_->watched.find(state_->keys.lock_range(resource).begin);
    return it != state_->watched.end() && it->second.created;
}

void EtcdReleaseWatch::run(std::stop_token stop) {
    auto delay = std::chrono::milliseconds(50);
    while (!stop.stop_requested()) {
        // Open a stream when someone waits; idle, wait for a waiter.
        {
            std::unique_lock lock(state_->mutex);
            state_->changed.wait(lock, stop, [&] { return !state_->watched.empty(); });
            if (stop.stop_requested()) return;
        }
        std::error_code error;
        auto channel = state_->rpc.channel(error);
        grpc::ClientContext context;
        if (channel && state_->rpc.authorize(context)) {
            auto stub = Watch::NewStub(channel);
            std::unique_ptr<WatchStream> stream = stub->Watch(&context);
            {
                // Published and every watch asked for in one step: a waiter that joins meanwhile
                // either asks on this stream itself or is asked for here, never both.
                std::lock_guard lock(state_->mutex);
                {
                    std::lock_guard stream_lock(state_->stream_mutex);
                    state_->context = &context;
                    state_->stream = stream.get();
                }
                for (auto& [_, w] : state_->watched) state_->create(w);
            }
            if (stop.stop_requested()) context.TryCancel();
            WatchResponse response;
            while (stream->Read(&response)) {
                delay = std::chrono::milliseconds(50);
                std::lock_guard lock(state_->mutex);
                Watched* w = state_->by_id(response.watch_id());
                if (w == nullptr) continue;  // cancelled since
                if (response.created()) w->created = true;
                if (response.canceled()) {
                    // etcd dropped the watch (a compaction): every waiter looks for itself, and the
                    // watch is asked for again.
                    w->line.wake_all();
                    state_->create(*w);
                }
                for (const auto& event : response.events())
                    if (event.type() == mvccpb::Event::DELETE) w->line.wake_next();
                state_->changed.notify_all();
            }
            {
                std::lock_guard stream_lock(state_->stream_mutex);
                state_->context = nullptr;
                state_->stream = nullptr;
            }
            (void)stream->Finish();
        }
        // The stream is gone: no watch stands, and a release may have been missed.
        {
            std::unique_lock lock(state_->mutex);
            for (auto& [_, w] : state_->watched) {
                w.created = false;
                w.watch_id = 0;
                w.line.wake_all();
            }
            state_->changed.notify_all();
            state_->changed.wait_for(lock, stop, delay, [] { return false; });
        }
        delay = std::min(delay * 2, std::chrono::milliseconds(1000));
    }
}

}  // namespace fencelock::detail::etcd
