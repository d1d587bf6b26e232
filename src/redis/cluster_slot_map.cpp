#include "redis/cluster_slot_map.hpp"

#include <algorithm>

#include "fencelock/error.hpp"

namespace fencelock::detail {

SlotMap::SlotMap() { owner_.fill(none); }

std::uint16_t SlotMap::node_index(const ServerAddress& address) {
    const auto it = std::ranges::find(nodes_, address);
    if (it != nodes_.end()) return static_cast<std::uint16_t>(it - nodes_.begin());
    nodes_.push_back(address);
    return static_cast<std::uint16_t>(nodes_.size() - 1);
}

std::expected<SlotMap, std::error_code> SlotMap::from_cluster_slots(const Reply& reply, const ServerAddress& asked) {
    const auto bad = [] { return std::unexpected(make_error_code(errc::protocol_error)); };
    if (reply.kind != Reply::Kind::array) return bad();
    SlotMap map;
    for (const Reply& range : reply.elements) {
        if (range.kind != Reply::Kind::array || range.elements.size() < 3) return bad();
        const Reply& first = range.elements[0];
        const Reply& last = range.elements[1];
        const Reply& master = range.elements[2];
        if (first.kind != Reply::Kind::integer || last.kind != Reply::Kind::integer || first.integer < 0 ||
            last.integer < first.integer || last.integer >= cluster_slots)
            return bad();
        if (master.kind != Reply::Kind::array || master.elements.size() < 2 ||
            master.elements[0].kind != Reply::Kind::string || master.elements[1].kind != Reply::Kind::integer ||
            master.elements[1].integer <= 0 || master.elements[1].integer > 65535)
            return bad();
        ServerAddress at{master.elements[0].str, static_cast<std::uint16_t>(master.elements[1].integer)};
        if (at.host.empty() || at.host == "?") at.host = asked.host;
        const std::uint16_t index = map.node_index(at);
        for (auto slot = first.integer; slot <= last.integer; ++slot)
            map.owner_[static_cast<std::size_t>(slot)] = index;
    }
    return map;
}

std::optional<ServerAddress> SlotMap::master_of(std::uint16_t slot) const {
    if (slot >= cluster_slots || owner_[slot] == none) return std::nullopt;
    return nodes_[owner_[slot]];
}

void SlotMap::moved(std::uint16_t slot, const ServerAddress& to) {
    if (slot < cluster_slots) owner_[slot] = node_index(to);
}

std::vector<ServerAddress> SlotMap::masters() const {
    std::vector<bool> seen(nodes_.size(), false);
    std::vector<ServerAddress> out;
    for (const std::uint16_t index : owner_) {
        if (index == none || seen[index]) continue;
        seen[index] = true;
        out.push_back(nodes_[index]);
    }
    return out;
}

bool SlotMap::complete() const {
    return std::ranges::none_of(owner_, [](std::uint16_t i) { return i == none; });
}

}  // namespace fencelock::detail
