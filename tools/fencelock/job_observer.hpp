#pragma once
// Job events of the queue runtime into the same metrics and logs as lock events.
#include "fencelock/queue_observer.hpp"
#include "observe.hpp"

namespace fencelock::cli {

class JobObserver final : public QueueObserver {
public:
    explicit JobObserver(const Observability& o) : o_(o) {}
    void on_decision(const Decision& d) noexcept override;
    void on_transport_error(std::error_code ec) noexcept override;

private:
    const Observability& o_;
};

}  // namespace fencelock::cli
