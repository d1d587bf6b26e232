// check_wire_compat on small hand-written descriptors: each test changes one thing etcd's side
// and the subset must agree on, and expects the line that names it.
#include "proto_compat.hpp"

#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/text_format.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

using fencelock::test_support::check_wire_compat;
using fencelock::test_support::WireCompatReport;
using google::protobuf::DescriptorPool;
using google::protobuf::FileDescriptorProto;
using Lines = std::vector<std::string>;

// "etcd's" file: a message with a oneof, a nested enum, a repeated message field, a service with a
// unary and a streaming rpc. Tests derive the subset from it by text substitution.
const std::string etcd_file = R"pb(
    name: "rpc.proto"
    package: "p"
    syntax: "proto3"
    message_type {
      name: "KeyValue"
      field { name: "key" number: 1 type: TYPE_BYTES label: LABEL_OPTIONAL }
      field { name: "lease" number: 6 type: TYPE_INT64 label: LABEL_OPTIONAL }
    }
    message_type {
      name: "Compare"
      field { name: "result" number: 1 type: TYPE_ENUM type_name: ".p.Compare.Result" label: LABEL_OPTIONAL }
      field { name: "version" number: 4 type: TYPE_INT64 label: LABEL_OPTIONAL oneof_index: 0 }
      field { name: "value" number: 7 type: TYPE_BYTES label: LABEL_OPTIONAL oneof_index: 0 }
      field { name: "range_end" number: 64 type: TYPE_BYTES label: LABEL_OPTIONAL }
      enum_type {
        name: "Result"
        value { name: "EQUAL" number: 0 }
        value { name: "GREATER" number: 1 }
      }
      oneof_decl { name: "target_union" }
    }
    message_type {
      name: "RangeResponse"
      field { name: "kvs" number: 2 type: TYPE_MESSAGE type_name: ".p.KeyValue" label: LABEL_REPEATED }
      field { name: "count" number: 4 type: TYPE_INT64 label: LABEL_OPTIONAL }
    }
    service {
      name: "KV"
      method { name: "Range" input_type: ".p.Compare" output_type: ".p.RangeResponse" }
      method {
        name: "Watch"
        input_type: ".p.Compare"
        output_type: ".p.RangeResponse"
        client_streaming: true
        server_streaming: true
      }
    }
)pb";

// Returns `text` with its one occurrence of `from` replaced by `to` (fails the test otherwise).
std::string with(std::string text, const std::string& from, const std::string& to) {
    const auto at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    EXPECT_EQ(text.find(from, at + 1), std::string::npos) << from << " occurs twice";
    if (at != std::string::npos) text.replace(at, from.size(), to);
    return text;
}

WireCompatReport check(const std::string& subset_text, const std::string& etcd_text = etcd_file) {
    DescriptorPool subset;
    DescriptorPool etcd;
    FileDescriptorProto subset_proto;
    FileDescriptorProto etcd_proto;
    EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(subset_text, &subset_proto));
    EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(etcd_text, &etcd_proto));
    const auto* subset_file = subset.BuildFile(subset_proto);
    EXPECT_NE(etcd.BuildFile(etcd_proto), nullptr);
    EXPECT_NE(subset_file, nullptr);
    if (subset_file == nullptr) return {};
    return check_wire_compat({subset_file}, etcd);
}

TEST(WireCompat, TheSameFileMatchesAndEveryElementIsCounted) {
    const auto r = check(etcd_file);
    EXPECT_TRUE(r.mismatches.empty());
    EXPECT_EQ(r.messages, 3);
    EXPECT_EQ(r.fields, 8);
    EXPECT_EQ(r.enums, 1);
    EXPECT_EQ(r.enum_values, 2);
    EXPECT_EQ(r.services, 1);
    EXPECT_EQ(r.rpcs, 2);
    EXPECT_EQ(fencelock::test_support::summary_line(r),
              "proto compat: 3 messages, 8 fields, 1 enums, 2 rpcs checked, 0 mismatches");
}

TEST(WireCompat, FieldsTheSubsetLeavesOutAreNotReported) {
    const auto subset =
        with(etcd_file, R"(field { name: "range_end" number: 64 type: TYPE_BYTES label: LABEL_OPTIONAL })", "");
    const auto r = check(subset);
    EXPECT_TRUE(r.mismatches.empty());
    EXPECT_EQ(r.fields, 7);
}

TEST(WireCompat, AFieldNumberDiffers) {
    const auto r = check(with(etcd_file, R"(name: "lease" number: 6)", R"(name: "lease" number: 3)"));
    EXPECT_EQ(r.mismatches, (Lines{"field p.KeyValue.lease: number 3 in the subset, 6 in etcd's"}));
}

TEST(WireCompat, AScalarTypeDiffers) {
    const auto r = check(with(etcd_file, R"(number: 4 type: TYPE_INT64 label: LABEL_OPTIONAL })",
                              R"(number: 4 type: TYPE_UINT64 label: LABEL_OPTIONAL })"));
    EXPECT_EQ(r.mismatches, (Lines{"field p.RangeResponse.count: type uint64 in the subset, int64 in etcd's"}));
}

TEST(WireCompat, AMessageTypeDiffers) {
    const auto r = check(with(etcd_file, R"(type_name: ".p.KeyValue")", R"(type_name: ".p.Compare")"));
    EXPECT_EQ(r.mismatches, (Lines{"field p.RangeResponse.kvs: type message p.Compare in the subset, "
                                   "message p.KeyValue in etcd's"}));
}

TEST(WireCompat, RepeatednessDiffers) {
    const auto r =
        check(with(etcd_file, R"(".p.KeyValue" label: LABEL_REPEATED)", R"(".p.KeyValue" label: LABEL_OPTIONAL)"));
    EXPECT_EQ(r.mismatches, (Lines{"field p.RangeResponse.kvs: label optional in the subset, repeated in etcd's"}));
}

TEST(WireCompat, OneofMembershipDiffers) {
    const auto r = check(with(etcd_file, R"(number: 7 type: TYPE_BYTES label: LABEL_OPTIONAL oneof_index: 0)",
                              R"(number: 7 type: TYPE_BYTES label: LABEL_OPTIONAL)"));
    EXPECT_EQ(r.mismatches, (Lines{"field p.Compare.value: no oneof in the subset, oneof 'target_union' in etcd's"}));
}

TEST(WireCompat, AFieldUnderAnotherNameIsNamedWithTheFieldEtcdHasThere) {
    const auto r = check(with(etcd_file, R"(name: "count" number: 4)", R"(name: "total" number: 4)"));
    EXPECT_EQ(r.mismatches, (Lines{"field p.RangeResponse.total: not in etcd's message; number 4 there is "
                                   "field 'count'"}));
}

TEST(WireCompat, AnEnumValueNumberDiffers) {
    const auto r = check(with(etcd_file, R"(name: "GREATER" number: 1)", R"(name: "GREATER" number: 2)"));
    EXPECT_EQ(r.mismatches, (Lines{"enum value p.Compare.Result.GREATER: number 2 in the subset, 1 in etcd's"}));
}

TEST(WireCompat, AnRpcStreamsDifferently) {
    const auto r = check(with(etcd_file, "client_streaming: true", "client_streaming: false"));
    EXPECT_EQ(r.mismatches, (Lines{"rpc p.KV.Watch: request not streaming in the subset, streaming in etcd's"}));
}

TEST(WireCompat, AnRpcTakesAnotherRequest) {
    const auto r = check(
        with(etcd_file, R"(name: "Range" input_type: ".p.Compare")", R"(name: "Range" input_type: ".p.KeyValue")"));
    EXPECT_EQ(r.mismatches, (Lines{"rpc p.KV.Range: request p.KeyValue in the subset, p.Compare in etcd's"}));
}

TEST(WireCompat, ElementsEtcdDoesNotHaveAreNamed) {
    const auto r = check(
        with(with(etcd_file, R"(name: "KeyValue")", R"(name: "KeyValues")"), R"(".p.KeyValue")", R"(".p.KeyValues")"));
    EXPECT_EQ(r.mismatches, (Lines{"message p.KeyValues: not in etcd's files",
                                   "field p.RangeResponse.kvs: type message p.KeyValues in the subset, "
                                   "message p.KeyValue in etcd's"}));
    EXPECT_EQ(r.fields, 8);  // the missing message's fields are counted, though unchecked
}

}  // namespace
