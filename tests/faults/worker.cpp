#include "faults/worker.hpp"

namespace fencelock::faults {

std::string appended(const std::string& list, const std::string& element) {
    return list.empty() ? element : list + "," + element;
}

std::string RmwWorker::read(const std::string& resource, std::uint64_t fence) {
    const auto id = recorder_.invoke(OpKind::read, resource, fence);
    std::string value = target_.read(resource);
    recorder_.complete(id, Outcome::ok, 0, value);
    return value;
}

TargetStatus RmwWorker::write(const std::string& resource, const std::string& base, const std::string& element,
                              std::uint64_t fence) {
    const std::string value = appended(base, element);
    const auto id = recorder_.invoke(OpKind::write, resource, fence, value, element);
    const TargetWrite result = target_.write(resource, value, fence, element);
    recorder_.complete(id, result.status == TargetStatus::applied ? Outcome::ok : Outcome::fail, 0, {},
                       std::string(to_string(result.status)));
    return result.status;
}

}  // namespace fencelock::faults
