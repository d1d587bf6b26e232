// Wire compatibility of fencelock's etcd proto subset (src/coordinator/etcd/proto) with etcd's own
// .proto files. The subset declares etcd's messages under etcd's full names with only the fields
// fencelock uses; proto3 skips fields a reader does not know, so leaving fields out is safe. What
// must not differ is anything the bytes or the gRPC method path depend on: a field's number, wire
// type, message or enum type, repeatedness, packing and oneof, an enum value's number, an rpc's
// request and response types and streaming. check_wire_compat compares exactly those, element by
// element of the subset; names matter only to find an element's counterpart.
#pragma once

#include <google/protobuf/descriptor.h>

#include <string>
#include <vector>

namespace fencelock::test_support {

/// What check_wire_compat looked at and what differed. Counts include nested messages and enums.
struct WireCompatReport {
    int files = 0;
    int messages = 0;
    int fields = 0;
    int enums = 0;
    int enum_values = 0;
    int services = 0;
    int rpcs = 0;
    /// One line per difference, naming the element by its full name and saying what differs,
    /// e.g. "field etcdserverpb.PutRequest.lease: number 7 in the subset, 3 in etcd's".
    std::vector<std::string> mismatches;
};

/// Checks every message, field, enum, enum value, service and rpc declared in `subset_files`
/// against the element of the same full name in `shipped` (a pool built from etcd's files).
/// Elements of the shipped files that the subset leaves out are not reported.
WireCompatReport check_wire_compat(const std::vector<const google::protobuf::FileDescriptor*>& subset_files,
                                   const google::protobuf::DescriptorPool& shipped);

/// The report's summary line: "proto compat: N messages, M fields, E enums, K rpcs checked, X mismatches".
std::string summary_line(const WireCompatReport& report);

/// Reads a FileDescriptorSet (protoc --include_imports --descriptor_set_out) into `pool` and
/// returns the files it held, in the set's order. Throws std::runtime_error naming `path` when
/// the file cannot be read or parsed, or a file in it does not build (a missing import).
std::vector<const google::protobuf::FileDescriptor*> load_descriptor_set(const std::string& path,
                                                                         google::protobuf::DescriptorPool& pool);

}  // namespace fencelock::test_support
