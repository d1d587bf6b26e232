#pragma once
// Key names and the job's encoding as stream-entry fields. Pure.
//
// An entry carries: id, resource, key, payload, ca / ba / ia (contention, business and
// infrastructure attempts), dl (deliveries of earlier entries of the same job) and err (last
// error). A delayed job is the same field list packed with cmsgpack by the scripts, so a job is
// moved between the stream and the delayed set without the client decoding it.
#include <cstdint>
#include <expected>
#include <string>
#include <string_view>
#include <vector>

#include "fencelock/queue_job.hpp"
#include "redis/reply.hpp"

namespace fencelock::detail {

inline constexpr std::string_view consumer_group = "workers";

struct QueueKeys {
    std::string stream, delayed, dead, keys, stats;
};

/// `<prefix>queue:{Q}:stream` etc.
QueueKeys queue_keys(std::string_view prefix, std::string_view queue);

/// 32 lowercase hex characters from the kernel CSPRNG.
std::string new_job_id();

/// The entry fields of a job, as field, value, field, value...
std::vector<std::string> encode_job(const Job& job);

/// Decodes an entry's field/value array (a Reply array). `earlier_deliveries` is added to the
/// entry's dl field: pass the entry's delivery count. Fails with a description on a missing
/// or malformed field.
std::expected<Job, std::string> decode_job(std::string_view queue, const Reply& fields, std::uint32_t delivery_count);

/// decode_job for showing a job to an operator: an entry that does not decode (one that was
/// dead-lettered as it came) shows its id, the resource "?" and the decoding error as last_error.
Job job_for_display(std::string_view queue, const Reply& fields);

/// The raw field/value strings of an entry (for dead-lettering an entry that did not decode).
std::vector<std::string> raw_fields(const Reply& fields);

}  // namespace fencelock::detail
