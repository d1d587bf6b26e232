#include "queue/streams_codec.hpp"

#include <charconv>
#include <stdexcept>
#include <system_error>

#include "common/random_id.hpp"

namespace fencelock::detail {

QueueKeys queue_keys(std::string_view prefix, std::string_view queue) {
    const std::string base = std::string(prefix) + "queue:{" + std::string(queue) + "}:";
    return {base + "stream", base + "delayed", base + "dead", base + "keys", base + "stats"};
}

std::string new_job_id() { return random_hex_id(); }

std::vector<std::string> encode_job(const Job& job) {
    return {"id",       job.id,
            "resource", job.resource.str(),
            "key",      job.idempotency_key,
            "payload",  job.payload,
            "ca",       std::to_string(job.contention_attempts),
            "ba",       std::to_string(job.business_attempts),
            "ia",       std::to_string(job.infrastructure_attempts),
            "dl",       std::to_string(job.deliveries),
            "err",      job.last_error};
}

namespace {

bool parse_count(const std::string& text, std::uint32_t& out) {
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    return ec == std::errc() && end == text.data() + text.size() && !text.empty();
}

}  // namespace

std::vector<std::string> raw_fields(const Reply& fields) {
    std::vector<std::string> out;
    for (const auto& e : fields.elements) out.push_back(e.str);
    return out;
}

std::expected<Job, std::string> decode_job(std::string_view queue, const Reply& fields, std::uint32_t delivery_count) {
    if (fields.kind != Reply::Kind::array || fields.elements.size() % 2 != 0)
        return std::unexpected("entry fields are not field/value pairs");
    std::string id, resource, key, payload, err;
    std::uint32_t ca = 0, ba = 0, ia = 0, dl = 0;
    bool has_id = false, has_resource = false, has_key = false;
    for (std::size_t i = 0; i + 1 < fields.elements.size(); i += 2) {
        const std::string& name = fields.elements[i].str;
        const std::string& value = fields.elements[i + 1].str;
        bool ok = true;
        if (name == "id") {
            id = value;
            has_id = true;
        } else if (name == "resource") {
            resource = value;
            has_resource = true;
        } else if (name == "key") {
            key = value;
            has_key = true;
        } else if (name == "payload") payload = value;
        else if (name == "err") err = value;
        else if (name == "ca") ok = parse_count(value, ca);
        else if (name == "ba") ok = parse_count(value, ba);
        else if (name == "ia") ok = parse_count(value, ia);
        else if (name == "dl") ok = parse_count(value, dl);
        if (!ok) return std::unexpected("field " + name + " is not a count: '" + value + "'");
    }
    if (!has_id || id.empty()) return std::unexpected("entry has no job id");
    if (!has_key || key.empty()) return std::unexpected("entry has no idempotency key");
    if (!has_resource) return std::unexpected("entry has no resource");
    auto r = ResourceName::make(resource);
    if (!r) return std::unexpected("bad resource: " + r.error().message);
    return Job{.id = std::move(id),
               .queue = std::string(queue),
               .resource = std::move(*r),
               .idempotency_key = std::move(key),
               .payload = std::move(payload),
               .contention_attempts = ca,
               .business_attempts = ba,
               .infrastructure_attempts = ia,
               .deliveries = dl + delivery_count,
               .last_error = std::move(err)};
}

Job job_for_display(std::string_view queue, const Reply& fields) {
    auto job = decode_job(queue, fields, 0);
    if (job) return std::move(*job);
    Job placeholder{.id = "",
                    .queue = std::string(queue),
                    .resource = ResourceName::make("?").value(),
                    .idempotency_key = "",
                    .payload = "",
                    .last_error = job.error()};
    for (std::size_t i = 0; i + 1 < fields.elements.size(); i += 2)
        if (fields.elements[i].str == "id") placeholder.id = fields.elements[i + 1].str;
    return placeholder;
}

}  // namespace fencelock::detail
