#pragma once
// Short constructors for the Redis replies the scripts send, so a test reads like the reply.
#include <cstdint>
#include <initializer_list>
#include <string>

#include "fencelock/error.hpp"
#include "redis/reply.hpp"

namespace fencelock::test_support {

using detail::Reply;

inline Reply I(std::int64_t v) { return Reply::make_integer(v); }
inline Reply S(std::string s) { return Reply::make_string(std::move(s)); }
inline Reply Nil() { return Reply::make_nil(); }
inline Reply A(std::initializer_list<Reply> elements) { return Reply::make_array(elements); }
inline Reply Status(std::string s) { return {Reply::Kind::status, 0, std::move(s), {}}; }

/// The error a decoder answers with.
inline std::error_code err(errc e) { return make_error_code(e); }

}  // namespace fencelock::test_support
