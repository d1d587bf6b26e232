#pragma once
// Reading a Prometheus /metrics endpoint from a test: a plain HTTP/1.0 GET on loopback.
#include <string>

namespace fencelock::test_support {

/// The whole HTTP response (headers and body) for GET `path` on 127.0.0.1:`port`; empty if the
/// connection failed.
std::string http_get(unsigned short port, const std::string& path);

/// The value of one series in Prometheus text (`name{labels}` exactly as exported), -1 if absent.
/// `text` must start with a newline (prepend one to a scrape).
double sample(const std::string& text, const std::string& series);

}  // namespace fencelock::test_support
