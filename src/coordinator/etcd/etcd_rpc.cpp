#include "coordinator/etcd/etcd_rpc.hpp"

#include <grpcpp/grpcpp.h>
#include <netdb.h>
#include <sys/socket.h>

#include <arpa/inet.h>

#include <algorithm>
#include <expected>
#include <fstream>
#include <optional>
#include <sstream>

#include "fencelock/error.hpp"

namespace fencelock::detail::etcd {

using namespace etcdserverpb;

struct EtcdRpc::Stubs {
    std::shared_ptr<grpc::Channel> channel;
    std::unique_ptr<KV::Stub> kv;
    std::unique_ptr<Lease::Stub> lease;
    std::unique_ptr<Auth::Stub> auth;
};

namespace {

std::string show_members(const std::vector<HostAndPort>& members, bool tls) {
    std::string out = tls ? "etcds " : "etcd ";
    for (std::size_t i = 0; i < members.size(); ++i)
        out += (i ? "," : "") +
               (members[i].host.find(':') != std::string::npos ? "[" + members[i].host + "]" : members[i].host) + ":" +
               std::to_string(members[i].port);
    return out;
}

// One address of `host` ("[v6]" or "v4"), resolved here so that gRPC gets a list of literal
// addresses (its ipv4:/ipv6: targets) and fails over between members in order.
std::optional<std::string> literal_address(const std::string& host) {
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    if (::getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0 || found == nullptr) return std::nullopt;
    char text[INET6_ADDRSTRLEN] = {};
    std::optional<std::string> out;
    if (found->ai_family == AF_INET) {
        ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(found->ai_addr)->sin_addr, text, sizeof text);
        out = text;
    } else if (found->ai_family == AF_INET6) {
        ::inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(found->ai_addr)->sin6_addr, text, sizeof text);
        out = "[" + std::string(text) + "]";
    }
    ::freeaddrinfo(found);
    return out;
}

// A PEM file's contents, or nullopt when it cannot be read.
std::optional<std::string> read_pem(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return std::nullopt;
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

// etcds://: the CA to trust (else gRPC's default roots), the client pair, the name to verify.
std::expected<std::shared_ptr<grpc::ChannelCredentials>, std::string> tls_credentials(const TlsOptions& tls,
                                                                                      grpc::ChannelArguments& args) {
    grpc::SslCredentialsOptions ssl;
    const auto load = [](const std::string& path, const char* what, std::string& into) -> std::optional<std::string> {
        if (path.empty()) return std::nullopt;
        auto pem = read_pem(path);
        if (!pem) return std::string("cannot read the ") + what + " '" + path + "'";
        into = std::move(*pem);
        return std::nullopt;
    };
    if (auto problem = load(tls.ca_file, "CA file (tls_ca)", ssl.pem_root_certs)) return std::unexpected(*problem);
    if (auto problem = load(tls.cert_file, "client certificate (tls_cert)", ssl.pem_cert_chain))
        return std::unexpected(*problem);
    if (auto problem = load(tls.key_file, "client key (tls_key)", ssl.pem_private_key))
        return std::unexpected(*problem);
    if (!tls.server_name.empty()) args.SetSslTargetNameOverride(tls.server_name);
    return grpc::SslCredentials(ssl);
}

}  // namespace

EtcdRpc::EtcdRpc(RpcSettings settings)
    : settings_(std::move(settings)), where_(show_members(settings_.members, settings_.tls.enabled)) {}

EtcdRpc::~EtcdRpc() = default;

EtcdRpc::Stubs* EtcdRpc::stubs(std::error_code& error) {
    std::lock_guard lock(mutex_);
    if (stubs_) return stubs_.get();
    // gRPC takes one address family per target: the members' first family decides, and a
    // member of the other is left out (named in the detail if none is left).
    std::string family;
    std::string addresses;
    for (const auto& member : settings_.members) {
        const auto address = literal_address(member.host);
        if (!address) {
            remember_error_detail(make_error_code(errc::unavailable), where_ + ": cannot resolve " + member.host,
                                  "name_resolution_failed");
            error = make_error_code(errc::unavailable);
            return nullptr;
        }
        const std::string this_family = address->starts_with("[") ? "ipv6:" : "ipv4:";
        if (family.empty()) family = this_family;
        if (this_family != family) continue;
        addresses += (addresses.empty() ? "" : ",") + *address + ":" + std::to_string(member.port);
    }
    grpc::ChannelArguments args;
    // A member that stops answering (paused, cut off) is found by pings, and the channel moves
    // to the next; etcd refuses pings more often than every 5 s (--grpc-keepalive-min-time).
    args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 5000);
    args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 2000);
    args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
    args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
    auto credentials = grpc::InsecureChannelCredentials();
    if (settings_.tls.enabled) {
        auto tls = tls_credentials(settings_.tls, args);
        if (!tls) {
            remember_error_detail(make_error_code(errc::unavailable), where_ + ": " + tls.error(), "tls_files");
            error = make_error_code(errc::unavailable);
            return nullptr;
        }
        credentials = *tls;
    }
    auto stubs = std::make_unique<Stubs>();
    stubs->channel = grpc::CreateCustomChannel(family + addresses, credentials, args);
    stubs->kv = KV::NewStub(stubs->channel);
    stubs->lease = Lease::NewStub(stubs->channel);
    stubs->auth = Auth::NewStub(stubs->channel);
    stubs_ = std::move(stubs);
    return stubs_.get();
}

std::shared_ptr<grpc::Channel> EtcdRpc::channel(std::error_code& error) {
    Stubs* s = stubs(error);
    return s == nullptr ? nullptr : s->channel;
}

Result<void> EtcdRpc::authorize(grpc::ClientContext& context) {
    std::error_code error;
    Stubs* s = stubs(error);
    if (s == nullptr) return std::unexpected(error);
    if (auto auth = authenticate(*s); !auth) return auth;
    std::lock_guard lock(mutex_);
    if (!token_.empty()) context.AddMetadata("token", token_);
    return {};
}

void EtcdRpc::prepare(grpc::ClientContext& context) {
    context.set_deadline(std::chrono::system_clock::now() + settings_.command_timeout);
    // Not wait_for_ready: a member that is down fails the call at once (unavailable, nothing
    // sent) instead of holding it until the deadline.
    std::lock_guard lock(mutex_);
    if (!token_.empty()) context.AddMetadata("token", token_);
}

Result<void> EtcdRpc::authenticate(Stubs& stubs) {
    if (settings_.user.empty()) return {};
    {
        std::lock_guard lock(mutex_);
        if (!token_.empty()) return {};
    }
    AuthenticateRequest request;
    request.set_name(settings_.user);
    request.set_password(settings_.password);
    AuthenticateResponse response;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + settings_.command_timeout);
    const grpc::Status status = stubs.auth->Authenticate(&context, request, &response);
    if (!status.ok()) {
        // etcd answers a wrong user or password with INVALID_ARGUMENT.
        if (status.error_code() == grpc::StatusCode::INVALID_ARGUMENT) {
            remember_error_detail(make_error_code(errc::auth_failed), where_ + ": " + status.error_message(),
                                  "auth_rejected");
            return std::unexpected(make_error_code(errc::auth_failed));
        }
        return std::unexpected(failure(status, Effect::read, "Authenticate"));
    }
    std::lock_guard lock(mutex_);
    token_ = response.token();
    return {};
}

bool EtcdRpc::token_expired(const grpc::Status& status) {
    if (settings_.user.empty() || status.error_code() != grpc::StatusCode::UNAUTHENTICATED) return false;
    std::lock_guard lock(mutex_);
    token_.clear();
    return true;
}

std::error_code EtcdRpc::failure(const grpc::Status& status, Effect effect, std::string_view call) {
    using grpc::StatusCode;
    errc code = errc::protocol_error;
    std::string cause;
    switch (status.error_code()) {
        case StatusCode::UNAVAILABLE:
            // Refused or broken: a write may have reached the leader before the break.
            code = effect == Effect::read ? errc::unavailable : errc::connection_lost;
            break;
        case StatusCode::DEADLINE_EXCEEDED: code = errc::reply_timeout; break;
        case StatusCode::UNAUTHENTICATED:
            code = errc::auth_failed;
            cause = settings_.user.empty() ? "auth_required" : "auth_rejected";
            break;
        case StatusCode::PERMISSION_DENIED:
            code = errc::auth_failed;
            cause = "noperm";
            break;
        // A stream reset or a proposal etcd dropped: the request may or may not have applied.
        case StatusCode::UNKNOWN:
        case StatusCode::INTERNAL:
        case StatusCode::CANCELLED:
        case StatusCode::ABORTED: code = effect == Effect::read ? errc::unavailable : errc::connection_lost; break;
        case StatusCode::RESOURCE_EXHAUSTED: code = errc::server_busy; break;
        case StatusCode::INVALID_ARGUMENT:
            // An etcd with auth enabled and no user given: etcd calls the empty name invalid.
            if (status.error_message().find("user name is empty") != std::string::npos) {
                code = errc::auth_failed;
                cause = "auth_required";
            }
            break;
        // "requested lease not found": the lease ran out (or was revoked) before the request
        // that names it, which etcd then refused whole. Nothing was written; a retry grants anew.
        case StatusCode::NOT_FOUND: code = errc::server_busy; break;
        default: break;
    }
    const auto ec = make_error_code(code);
    remember_error_detail(ec, where_ + ": " + std::string(call) + ": " + status.error_message(), cause);
    return ec;
}

template <typename Call>
std::error_code EtcdRpc::unary(Effect effect, std::string_view name, Call&& call) {
    std::error_code error;
    Stubs* s = stubs(error);
    if (s == nullptr) return error;
    for (int attempt = 0;; ++attempt) {
        if (auto auth = authenticate(*s); !auth) return auth.error();
        grpc::ClientContext context;
        prepare(context);
        const grpc::Status status = call(*s, context);
        if (status.ok()) return {};
        if (attempt == 0 && token_expired(status)) continue;
        return failure(status, effect, name);
    }
}

Result<TxnResponse> EtcdRpc::txn(const TxnRequest& request, Effect effect) {
    TxnResponse response;
    if (auto ec =
            unary(effect, "Txn", [&](Stubs& s, grpc::ClientContext& c) { return s.kv->Txn(&c, request, &response); }))
        return std::unexpected(ec);
    return response;
}

Result<RangeResponse> EtcdRpc::range(const RangeRequest& request) {
    RangeResponse response;
    if (auto ec = unary(Effect::read, "Range",
                        [&](Stubs& s, grpc::ClientContext& c) { return s.kv->Range(&c, request, &response); }))
        return std::unexpected(ec);
    return response;
}

Result<LeaseGrantResponse> EtcdRpc::lease_grant(std::int64_t ttl_seconds) {
    LeaseGrantRequest request;
    request.set_ttl(ttl_seconds);
    LeaseGrantResponse response;
    // A lease granted and never told is harmless: nothing is attached to it and it runs out.
    if (auto ec = unary(Effect::read, "LeaseGrant",
                        [&](Stubs& s, grpc::ClientContext& c) { return s.lease->LeaseGrant(&c, request, &response); }))
        return std::unexpected(ec);
    if (!response.error().empty()) {
        remember_error_detail(make_error_code(errc::protocol_error), where_ + ": LeaseGrant: " + response.error());
        return std::unexpected(make_error_code(errc::protocol_error));
    }
    return response;
}

Result<void> EtcdRpc::lease_revoke(std::int64_t id) {
    LeaseRevokeRequest request;
    request.set_id(id);
    LeaseRevokeResponse response;
    grpc::StatusCode code = grpc::StatusCode::OK;
    auto ec = unary(Effect::write, "LeaseRevoke", [&](Stubs& s, grpc::ClientContext& c) {
        grpc::Status status = s.lease->LeaseRevoke(&c, request, &response);
        code = status.error_code();
        // "requested lease not found": revoked already, or expired.
        return code == grpc::StatusCode::NOT_FOUND ? grpc::Status::OK : status;
    });
    if (ec) return std::unexpected(ec);
    return {};
}

Result<LeaseTimeToLiveResponse> EtcdRpc::lease_time_to_live(std::int64_t id) {
    LeaseTimeToLiveRequest request;
    request.set_id(id);
    LeaseTimeToLiveResponse response;
    if (auto ec = unary(Effect::read, "LeaseTimeToLive", [&](Stubs& s, grpc::ClientContext& c) {
            return s.lease->LeaseTimeToLive(&c, request, &response);
        }))
        return std::unexpected(ec);
    return response;
}

Result<EtcdRpc::KeptAlive> EtcdRpc::keep_alive(std::span<const std::int64_t> ids) {
    KeptAlive out{.ttls = std::vector<std::int64_t>(ids.size(), 0)};
    if (ids.empty()) return out;
    // A stream per batch, bounded by the command timeout like any call: the requests go out
    // together and etcd answers each in turn on the stream.
    auto ec = unary(Effect::write, "LeaseKeepAlive", [&](Stubs& s, grpc::ClientContext& c) {
        auto stream = s.lease->LeaseKeepAlive(&c);
        LeaseKeepAliveRequest request;
        for (const std::int64_t id : ids) {
            request.set_id(id);
            if (!stream->Write(request)) break;
        }
        stream->WritesDone();
        LeaseKeepAliveResponse response;
        for (std::size_t i = 0; i < ids.size(); ++i) {
            if (!stream->Read(&response)) {
                grpc::Status status = stream->Finish();
                return status.ok() ? grpc::Status(grpc::StatusCode::INTERNAL, "the stream ended before every answer")
                                   : status;
            }
            // Answers come in order; one for another lease counts as none (the lease is lost).
            out.ttls[i] = response.id() == ids[i] ? response.ttl() : 0;
            const std::uint64_t term = response.header().raft_term();
            out.lowest_term = i == 0 ? term : std::min(out.lowest_term, term);
            out.highest_term = std::max(out.highest_term, term);
        }
        return stream->Finish();
    });
    if (ec) return std::unexpected(ec);
    return out;
}

}  // namespace fencelock::detail::etcd
