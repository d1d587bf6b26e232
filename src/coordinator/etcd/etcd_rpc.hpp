#pragma once
// The etcd coordinator's calls: one gRPC channel to the cluster's members (opened at the first
// call: creating this sends nothing), each call bounded by the command timeout, every gRPC
// status turned into the library's error codes with etcd's own words kept as the detail
// (fencelock::error_detail). With a user, the first call authenticates and every call carries
// the token; a token etcd no longer knows is renewed once and the call retried.
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "fencelock/redis_url.hpp"
#include "fencelock/result.hpp"
#include "rpc.grpc.pb.h"

namespace grpc {
class Channel;
class ClientContext;
class Status;
}  // namespace grpc

namespace fencelock::detail::etcd {

struct RpcSettings {
    std::vector<HostAndPort> members{};
    std::string user{};
    std::string password{};
    /// etcds://: the CA to trust (empty: the system's), a client certificate and key, the name
    /// to verify.
    TlsOptions tls{};
    std::chrono::milliseconds connect_timeout{1000};
    std::chrono::milliseconds command_timeout{1000};
};

/// Whether a call may have changed etcd, for what a lost reply means: a read that failed is
/// retryable, a write that failed after it was sent has an unknown outcome.
enum class Effect { read, write };

class EtcdRpc {
public:
    explicit EtcdRpc(RpcSettings settings);
    ~EtcdRpc();

    Result<etcdserverpb::TxnResponse> txn(const etcdserverpb::TxnRequest& request, Effect effect);
    Result<etcdserverpb::RangeResponse> range(const etcdserverpb::RangeRequest& request);
    /// A new lease of `ttl` whole seconds (etcd may raise it to its minimum TTL).
    Result<etcdserverpb::LeaseGrantResponse> lease_grant(std::int64_t ttl_seconds);
    /// Revokes a lease (deleting its keys); a lease already gone counts as revoked.
    Result<void> lease_revoke(std::int64_t id);
    Result<etcdserverpb::LeaseTimeToLiveResponse> lease_time_to_live(std::int64_t id);
    /// What a batch of keep-alives answered: each lease's new TTL in seconds (0 for a lease etcd
    /// no longer has), and the Raft terms the answers were given in.
    struct KeptAlive {
        std::vector<std::int64_t> ttls;
        std::uint64_t lowest_term = 0;
        std::uint64_t highest_term = 0;
    };
    /// Keeps every lease in `ids` alive in one round trip (one KeepAlive stream, a request per
    /// lease). On a transport failure the error of the whole batch.
    Result<KeptAlive> keep_alive(std::span<const std::int64_t> ids);

    /// etcd's default limit of operations in one transaction (--max-txn-ops): batches of reads
    /// are cut to it.
    static constexpr std::size_t max_txn_ops = 128;

    /// The channel to the members, for a stream of a caller's own (the release watch); null
    /// with `error` set when a member name does not resolve.
    std::shared_ptr<grpc::Channel> channel(std::error_code& error);
    /// Authenticates (with a user) and puts the token on `context`, which has no deadline: a
    /// stream's context.
    Result<void> authorize(grpc::ClientContext& context);

    /// The members, for messages ("etcd 127.0.0.1:2379,127.0.0.1:22379").
    const std::string& where() const noexcept { return where_; }

private:
    struct Stubs;
    /// The stubs over the channel, made at the first call; nullptr with `error` set when a
    /// member name does not resolve.
    Stubs* stubs(std::error_code& error);
    /// A context with the call's deadline and the auth token.
    void prepare(grpc::ClientContext& context);
    /// Authenticates (with a user) unless a token is there; false with the error when refused.
    Result<void> authenticate(Stubs& stubs);
    /// Whether `status` says the token expired, after which the call is retried once.
    bool token_expired(const grpc::Status& status);
    std::error_code failure(const grpc::Status& status, Effect effect, std::string_view call);
    /// Runs `call(stubs, context)` (a grpc::Status), once more after a token renewal.
    template <typename Call>
    std::error_code unary(Effect effect, std::string_view name, Call&& call);

    const RpcSettings settings_;
    const std::string where_;
    std::mutex mutex_;
    std::unique_ptr<Stubs> stubs_;
    std::string token_;
};

}  // namespace fencelock::detail::etcd
