#pragma once
// Where the etcd coordinator keeps a lock (pure: no I/O). Under the client's key prefix:
//
//   <p>fencelock/lock/<R>/<owner>   one key per lease, attached to the lease's etcd lease; the
//                                   holder of R is the key of the range with the smallest
//                                   create revision, and that revision is its fence
//   <p>fencelock/fence/<R>          put in the same transaction as every grant: its mod revision
//                                   is the last fence issued for R (inspect's last_fence)
//   <p>fencelock/audit/<id>         one force-release each; its create revision orders the log
//
// <R> is the resource name with '%', '/' and bytes outside printable ASCII percent-encoded, so
// that one resource's range never holds another's keys ("a" and "a/b" stay apart).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fencelock/types.hpp"

namespace fencelock::detail::etcd {

/// A key range [begin, end) as etcd's range_end means it.
struct KeyRange {
    std::string begin;
    std::string end;
};

/// The end of the range of every key that starts with `prefix` (etcd's prefix rule).
std::string prefix_end(std::string_view prefix);

/// `name` with '%', '/' and bytes outside 0x21..0x7e percent-encoded.
std::string escape_resource(std::string_view name);
/// The inverse of escape_resource; nullopt for text it cannot have made.
std::optional<std::string> unescape_resource(std::string_view text);

class EtcdKeys {
public:
    explicit EtcdKeys(std::string prefix) : root_(std::move(prefix) + "fencelock/") {}

    /// Every lease key of `resource`.
    KeyRange lock_range(const ResourceName& resource) const;
    /// The lease key of `owner` on `resource`.
    std::string lock_key(const ResourceName& resource, const OwnerToken& owner) const;
    /// The lease key of `owner` given the lease's address (lease_address()).
    std::string lock_key(std::string_view address, const OwnerToken& owner) const;
    /// The escaped resource that the keeper names a lease by (RenewalChannel::lease_address).
    std::string address(const ResourceName& resource) const { return escape_resource(resource.str()); }
    std::string fence_key(const ResourceName& resource) const;
    /// Every lease key of every resource (list).
    KeyRange all_locks() const;
    std::string audit_key(std::string_view id) const { return root_ + "audit/" + std::string(id); }
    KeyRange all_audit() const;

    /// The resource and owner a lease key names, nullopt for a key that is not one.
    struct LeaseKeyParts {
        std::string resource;
        std::string owner;
    };
    std::optional<LeaseKeyParts> parse_lock_key(std::string_view key) const;

private:
    std::string locks() const { return root_ + "lock/"; }
    std::string root_;
};

/// What a lease key's value says of its holder (inspect and list show it). The times are the
/// acquiring client's wall clock: etcd has none to offer, and only people read them.
struct LeaseValue {
    std::int64_t acquired_ms = 0;
    std::int64_t lease_ms = 0;
    std::int64_t max_hold_ms = 0;
    std::int64_t pid = 0;
    std::string host;
    std::string label;
};

/// The first `count` space-separated fields of `text` and all that follows them (which may hold
/// spaces, or be empty); nullopt when `text` has fewer fields.
struct SplitFields {
    std::vector<std::string_view> fields;
    std::string_view rest;
};
std::optional<SplitFields> split_fields(std::string_view text, std::size_t count);

/// `v1 <acquired_ms> <lease_ms> <max_hold_ms> <pid> <host> <label>`; a space in the host
/// becomes '_', and the label, which may hold anything, is all that follows.
std::string encode_lease_value(const LeaseValue& value);
std::optional<LeaseValue> decode_lease_value(std::string_view text);

}  // namespace fencelock::detail::etcd
