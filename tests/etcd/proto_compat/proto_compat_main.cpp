// etcd_proto_compat: checks fencelock's etcd proto subset against etcd's own .proto files.
//   proto_compat SUBSET.pb SHIPPED.pb
// Both arguments are FileDescriptorSets made by protoc --include_imports --descriptor_set_out:
// SUBSET.pb from src/coordinator/etcd/proto, SHIPPED.pb from the files
// scripts/fetch-etcd-protos.sh takes from Debian's golang-etcd-server-dev. Every file of SUBSET.pb
// is checked except google/protobuf/* (the well-known types, the same for every user).
// Prints one line per mismatch, then the summary line. Exit codes: 0 compatible, 1 a mismatch
// (or nothing to check), 2 usage or an unreadable descriptor set.
#include <exception>
#include <iostream>

#include "proto_compat.hpp"

int main(int argc, char** argv) {
    using namespace fencelock::test_support;
    if (argc != 3) {
        std::cerr << "usage: " << argv[0] << " SUBSET.pb SHIPPED.pb (protoc --include_imports --descriptor_set_out)\n";
        return 2;
    }
    google::protobuf::DescriptorPool subset_pool;
    google::protobuf::DescriptorPool shipped_pool;
    std::vector<const google::protobuf::FileDescriptor*> subset_files;
    try {
        for (const auto* f : load_descriptor_set(argv[1], subset_pool)) {
            if (!f->name().starts_with("google/protobuf/")) subset_files.push_back(f);
        }
        load_descriptor_set(argv[2], shipped_pool);
    } catch (const std::exception& e) {
        std::cerr << "proto compat: " << e.what() << "\n";
        return 2;
    }
    const WireCompatReport report = check_wire_compat(subset_files, shipped_pool);
    for (const auto& line : report.mismatches) std::cout << "mismatch: " << line << "\n";
    std::cout << summary_line(report) << "\n";
    // An empty subset would pass while checking nothing.
    if (report.messages == 0 || report.fields == 0) {
        std::cout << "proto compat: the subset (" << argv[1]
                  << ") declares no message with fields: nothing was checked\n";
        return 1;
    }
    return report.mismatches.empty() ? 0 : 1;
}
