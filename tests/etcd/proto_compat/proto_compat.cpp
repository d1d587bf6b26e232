#include "proto_compat.hpp"

#include <google/protobuf/descriptor.pb.h>

#include <fstream>
#include <stdexcept>

namespace fencelock::test_support {

namespace {

using google::protobuf::Descriptor;
using google::protobuf::DescriptorPool;
using google::protobuf::EnumDescriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::FileDescriptor;
using google::protobuf::ServiceDescriptor;

std::string quoted(const std::string& s) { return "'" + s + "'"; }

// A field's type as the wire sees it: the scalar type, or the message or enum type's full name.
std::string type_of(const FieldDescriptor& f) {
    if (f.message_type() != nullptr) return std::string(f.type_name()) + " " + f.message_type()->full_name();
    if (f.enum_type() != nullptr) return std::string(f.type_name()) + " " + f.enum_type()->full_name();
    return f.type_name();
}

std::string label_of(const FieldDescriptor& f) {
    switch (f.label()) {
        case FieldDescriptor::LABEL_OPTIONAL: return "optional";
        case FieldDescriptor::LABEL_REQUIRED: return "required";
        case FieldDescriptor::LABEL_REPEATED: return "repeated";
    }
    return "unknown label";
}

// proto3 `optional` fields sit in a synthetic oneof of their own; it is compared like any other.
std::string oneof_of(const FieldDescriptor& f) {
    return f.containing_oneof() == nullptr ? "no oneof" : "oneof " + quoted(f.containing_oneof()->name());
}

// Repeated scalars are packed by default in proto3; a reader accepts both encodings, but a
// difference here means the subset was written differently from etcd's file.
std::string packing_of(const FieldDescriptor& f) { return f.is_packed() ? "packed" : "not packed"; }

std::string streaming(bool on) { return on ? "streaming" : "not streaming"; }

class Checker {
public:
    explicit Checker(const DescriptorPool& shipped) : shipped_(shipped) {}

    void file(const FileDescriptor& f) {
        ++report_.files;
        for (int i = 0; i < f.message_type_count(); ++i) message(*f.message_type(i));
        for (int i = 0; i < f.enum_type_count(); ++i) enumeration(*f.enum_type(i));
        for (int i = 0; i < f.service_count(); ++i) service(*f.service(i));
    }

    WireCompatReport take() { return std::move(report_); }

private:
    void mismatch(const std::string& kind, const std::string& full_name, const std::string& what) {
        report_.mismatches.push_back(kind + " " + full_name + ": " + what);
    }

    // Reports `what` unless the subset's and etcd's descriptions of it agree.
    void compare(const std::string& kind, const std::string& full_name, const std::string& what,
                 const std::string& ours, const std::string& theirs) {
        if (ours != theirs) mismatch(kind, full_name, what + ours + " in the subset, " + theirs + " in etcd's");
    }

    void message(const Descriptor& ours) {
        ++report_.messages;
        const Descriptor* theirs = shipped_.FindMessageTypeByName(ours.full_name());
        if (theirs == nullptr) {
            mismatch("message", ours.full_name(), "not in etcd's files");
            report_.fields += ours.field_count();  // counted, though there is nothing to compare with
        } else {
            for (int i = 0; i < ours.field_count(); ++i) field(*ours.field(i), *theirs);
        }
        for (int i = 0; i < ours.nested_type_count(); ++i) message(*ours.nested_type(i));
        for (int i = 0; i < ours.enum_type_count(); ++i) enumeration(*ours.enum_type(i));
    }

    void field(const FieldDescriptor& ours, const Descriptor& their_message) {
        ++report_.fields;
        const std::string& name = ours.full_name();
        const FieldDescriptor* theirs = their_message.FindFieldByName(ours.name());
        if (theirs == nullptr) {
            const FieldDescriptor* by_number = their_message.FindFieldByNumber(ours.number());
            mismatch("field", name,
                     "not in etcd's message" +
                         (by_number == nullptr
                              ? std::string(", nor any field numbered ") + std::to_string(ours.number())
                              : "; number " + std::to_string(ours.number()) + " there is field " +
                                    quoted(by_number->name())));
            return;
        }
        compare("field", name, "number ", std::to_string(ours.number()), std::to_string(theirs->number()));
        compare("field", name, "type ", type_of(ours), type_of(*theirs));
        compare("field", name, "label ", label_of(ours), label_of(*theirs));
        compare("field", name, "", packing_of(ours), packing_of(*theirs));
        compare("field", name, "", oneof_of(ours), oneof_of(*theirs));
    }

    void enumeration(const EnumDescriptor& ours) {
        ++report_.enums;
        const EnumDescriptor* theirs = shipped_.FindEnumTypeByName(ours.full_name());
        if (theirs == nullptr) {
            mismatch("enum", ours.full_name(), "not in etcd's files");
            report_.enum_values += ours.value_count();
            return;
        }
        for (int i = 0; i < ours.value_count(); ++i) {
            ++report_.enum_values;
            const auto& value = *ours.value(i);
            // Named under its enum: protobuf's own full name for a value leaves the enum out.
            const std::string name = ours.full_name() + "." + value.name();
            const auto* their_value = theirs->FindValueByName(value.name());
            if (their_value == nullptr) {
                mismatch("enum value", name, "not in etcd's enum");
                continue;
            }
            compare("enum value", name, "number ", std::to_string(value.number()),
                    std::to_string(their_value->number()));
        }
    }

    void service(const ServiceDescriptor& ours) {
        ++report_.services;
        const ServiceDescriptor* theirs = shipped_.FindServiceByName(ours.full_name());
        if (theirs == nullptr) {
            mismatch("service", ours.full_name(), "not in etcd's files");
            report_.rpcs += ours.method_count();
            return;
        }
        for (int i = 0; i < ours.method_count(); ++i) {
            ++report_.rpcs;
            const auto& rpc = *ours.method(i);
            const auto* their_rpc = theirs->FindMethodByName(rpc.name());
            if (their_rpc == nullptr) {
                mismatch("rpc", rpc.full_name(), "not in etcd's service");
                continue;
            }
            const std::string& name = rpc.full_name();
            compare("rpc", name, "request ", rpc.input_type()->full_name(), their_rpc->input_type()->full_name());
            compare("rpc", name, "response ", rpc.output_type()->full_name(), their_rpc->output_type()->full_name());
            compare("rpc", name, "request ", streaming(rpc.client_streaming()),
                    streaming(their_rpc->client_streaming()));
            compare("rpc", name, "response ", streaming(rpc.server_streaming()),
                    streaming(their_rpc->server_streaming()));
        }
    }

    const DescriptorPool& shipped_;
    WireCompatReport report_;
};

// Collects protoc-style build errors, so that a set that does not build says why.
class ErrorList : public DescriptorPool::ErrorCollector {
public:
    void AddError(const std::string& filename, const std::string& element_name, const google::protobuf::Message*,
                  ErrorLocation, const std::string& message) override {
        text += "\n  " + filename + ": " + element_name + ": " + message;
    }
    std::string text;
};

}  // namespace

WireCompatReport check_wire_compat(const std::vector<const FileDescriptor*>& subset_files,
                                   const DescriptorPool& shipped) {
    Checker checker(shipped);
    for (const FileDescriptor* f : subset_files) checker.file(*f);
    return checker.take();
}

std::string summary_line(const WireCompatReport& r) {
    return "proto compat: " + std::to_string(r.messages) + " messages, " + std::to_string(r.fields) + " fields, " +
           std::to_string(r.enums) + " enums, " + std::to_string(r.rpcs) + " rpcs checked, " +
           std::to_string(r.mismatches.size()) + " mismatches";
}

std::vector<const FileDescriptor*> load_descriptor_set(const std::string& path, DescriptorPool& pool) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error(path + ": cannot open");
    google::protobuf::FileDescriptorSet set;
    if (!set.ParseFromIstream(&in)) throw std::runtime_error(path + ": not a FileDescriptorSet");
    std::vector<const FileDescriptor*> files;
    for (const auto& proto : set.file()) {
        ErrorList errors;
        const FileDescriptor* f = pool.BuildFileCollectingErrors(proto, &errors);
        if (f == nullptr) {
            throw std::runtime_error(path + ": " + proto.name() +
                                     " does not build (made without --include_imports?):" + errors.text);
        }
        files.push_back(f);
    }
    return files;
}

}  // namespace fencelock::test_support
