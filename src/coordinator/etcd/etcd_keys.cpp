#include "coordinator/etcd/etcd_keys.hpp"

#include <charconv>

namespace fencelock::detail::etcd {

std::string prefix_end(std::string_view prefix) {
    std::string end(prefix);
    // The next key after every key with this prefix: the last byte below 0xff, plus one.
    while (!end.empty()) {
        auto& last = reinterpret_cast<unsigned char&>(end.back());
        if (last < 0xff) {
            ++last;
            return end;
        }
        end.pop_back();
    }
    return std::string(1, '\0');  // etcd: every key
}

std::string escape_resource(std::string_view name) {
    static constexpr char hex[] = "0123456789ABCDEF";
    std::string out;
    out.reserve(name.size());
    for (const char c : name) {
        const auto byte = static_cast<unsigned char>(c);
        if (byte > 0x20 && byte < 0x7f && c != '%' && c != '/') {
            out += c;
        } else {
            out += '%';
            out += hex[byte >> 4];
            out += hex[byte & 0xf];
        }
    }
    return out;
}

std::optional<std::string> unescape_resource(std::string_view text) {
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] != '%') {
            out += text[i];
            continue;
        }
        unsigned byte = 0;
        if (i + 2 >= text.size()) return std::nullopt;
        const auto [end, ec] = std::from_chars(text.data() + i + 1, text.data() + i + 3, byte, 16);
        if (ec != std::errc{} || end != text.data() + i + 3) return std::nullopt;
        out += static_cast<char>(byte);
        i += 2;
    }
    return out;
}

KeyRange EtcdKeys::lock_range(const ResourceName& resource) const {
    std::string begin = locks() + escape_resource(resource.str()) + "/";
    std::string end = prefix_end(begin);
    return {std::move(begin), std::move(end)};
}

std::string EtcdKeys::lock_key(const ResourceName& resource, const OwnerToken& owner) const {
    return lock_key(address(resource), owner);
}

std::string EtcdKeys::lock_key(std::string_view address, const OwnerToken& owner) const {
    return locks() + std::string(address) + "/" + owner.str();
}

std::string EtcdKeys::fence_key(const ResourceName& resource) const {
    return root_ + "fence/" + escape_resource(resource.str());
}

KeyRange EtcdKeys::all_locks() const { return {locks(), prefix_end(locks())}; }

KeyRange EtcdKeys::all_audit() const {
    std::string begin = root_ + "audit/";
    std::string end = prefix_end(begin);
    return {std::move(begin), std::move(end)};
}

std::optional<EtcdKeys::LeaseKeyParts> EtcdKeys::parse_lock_key(std::string_view key) const {
    const std::string head = locks();
    if (!key.starts_with(head)) return std::nullopt;
    key.remove_prefix(head.size());
    // An escaped resource has no '/', so the first one ends it.
    const std::size_t slash = key.find('/');
    if (slash == std::string_view::npos || slash == 0 || slash + 1 == key.size()) return std::nullopt;
    auto resource = unescape_resource(key.substr(0, slash));
    if (!resource) return std::nullopt;
    return LeaseKeyParts{std::move(*resource), std::string(key.substr(slash + 1))};
}

std::string encode_lease_value(const LeaseValue& value) {
    std::string host = value.host.empty() ? "-" : value.host;
    for (char& c : host)
        if (c == ' ') c = '_';
    return "v1 " + std::to_string(value.acquired_ms) + " " + std::to_string(value.lease_ms) + " " +
           std::to_string(value.max_hold_ms) + " " + std::to_string(value.pid) + " " + host + " " + value.label;
}

std::optional<SplitFields> split_fields(std::string_view text, std::size_t count) {
    SplitFields out;
    std::size_t begin = 0;
    while (out.fields.size() < count) {
        const std::size_t space = text.find(' ', begin);
        if (space == std::string_view::npos) return std::nullopt;
        out.fields.push_back(text.substr(begin, space - begin));
        begin = space + 1;
    }
    out.rest = text.substr(begin);
    return out;
}

std::optional<LeaseValue> decode_lease_value(std::string_view text) {
    // Six fields, then the label.
    const auto split = split_fields(text, 6);
    if (!split || split->fields[0] != "v1") return std::nullopt;
    const auto& fields = split->fields;
    LeaseValue value;
    const auto number = [](std::string_view s, std::int64_t& out) {
        const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
        return !s.empty() && ec == std::errc{} && end == s.data() + s.size();
    };
    if (!number(fields[1], value.acquired_ms) || !number(fields[2], value.lease_ms) ||
        !number(fields[3], value.max_hold_ms) || !number(fields[4], value.pid))
        return std::nullopt;
    value.host = fields[5] == "-" ? "" : std::string(fields[5]);
    value.label = std::string(split->rest);
    return value;
}

}  // namespace fencelock::detail::etcd
