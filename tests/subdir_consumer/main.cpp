// The program tests/subdir_consumer builds with fencelock added through add_subdirectory: it
// links fencelock::fencelock and uses its layers (URL parsing, names, options, the client)
// without a server.
#include <fencelock/fencelock.hpp>

#include <cstdio>
#include <string>

int main() {
    const auto endpoint = fencelock::parse_redis_url("redis://127.0.0.1:6390/2");
    if (!endpoint || endpoint->port != 6390) return 1;
    const auto resource = fencelock::ResourceName::make("subdir-consumer");
    if (!resource) return 1;
    // Validates the options; connections open on first use, so no server is needed.
    auto client = fencelock::LockClient::create({.endpoint = *endpoint});
    if (!client) return 1;
    std::printf("subdir consumer: fencelock %s, client made for %s\n", std::string(fencelock::version()).c_str(),
                resource->str().c_str());
    return 0;
}
