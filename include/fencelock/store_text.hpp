#pragma once
/// Store text: what the fenced stores accept in resource names, idempotency keys, values,
/// outcomes, outbox streams and payloads, and Transaction::exec statements and parameters.
///
/// Store text is valid UTF-8 (RFC 3629: shortest forms only, no UTF-16 surrogates, nothing above
/// U+10FFFF) without NUL bytes. Both backends apply this one rule before they send anything, so
/// SQLite and PostgreSQL accept and refuse the same input: PostgreSQL `text` cannot hold NUL
/// (libpq passes parameters as C strings, so `R\0x` would silently become `R`, another
/// resource's row) and a UTF8 database rejects invalid sequences, while SQLite would store
/// both. A refused call returns store_errc::invalid_input and changes nothing.
///
/// A ResourceName may hold any bytes (Redis does not mind); a resource guarded by a store, or
/// named by a queue job (which always ends in a store), must also be store text.

#include <expected>
#include <string_view>

#include "fencelock/types.hpp"

namespace fencelock {

/// Checks `text` against the store-text rule. The message says what is wrong and at which byte
/// offset; it never quotes the text.
std::expected<void, InvalidName> validate_store_text(std::string_view text);

}  // namespace fencelock
