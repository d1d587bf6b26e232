// Links against the installed library and exercises code from every layer without a server.
#include <fencelock/fencelock.hpp>

#include <cstdio>

int main() {
    using namespace std::chrono_literals;
    auto endpoint = fencelock::parse_redis_url("redis://127.0.0.1:1");
    auto client = fencelock::LockClient::create({.endpoint = *endpoint, .connect_timeout = 100ms});
    if (!client) return 1;
    auto resource = fencelock::ResourceName::make("consumer");
    // Nothing listens on port 1: the client must fail closed.
    auto got = client->try_acquire(*resource, {.lease = 1s});
    if (got || got.error() != fencelock::errc::unavailable) return 1;
    std::puts("consumer: fails closed as expected");
    return 0;
}
