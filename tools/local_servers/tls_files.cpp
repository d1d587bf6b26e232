#include "local_servers/tls_files.hpp"

#include <fstream>
#include <stdexcept>
#include <system_error>
#include <vector>

#include "local_servers/child_process.hpp"
#include "local_servers/process_io.hpp"

namespace fencelock::local {
namespace {

// One config file for every step, so nothing depends on the system's openssl.cnf: the
// extension sections each certificate gets, and the minimal `openssl ca` setup that the
// expired certificate needs (`req -x509` and `x509 -req` in 3.0 cannot date a certificate in
// the past; `ca -startdate/-enddate` can). `ca` reads its database paths relative to the
// working directory: they are absolute, under `dir`, and openssl expands $dir itself.
std::string config_text(const std::filesystem::path& dir) {
    return "dir = " + dir.string() + "\n" + R"([req]
distinguished_name = dn
prompt = no
[dn]
CN = unused
[ca_ext]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[server_ext]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1, DNS:localhost
[client_ext]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = clientAuth
[wrong_host_ext]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = DNS:wrong.example
[ca]
default_ca = past_ca
[past_ca]
database = $dir/index.txt
new_certs_dir = $dir
serial = $dir/serial
default_md = sha256
policy = any_name
unique_subject = no
x509_extensions = server_ext
[any_name]
commonName = supplied
)";
}

void write_file(const std::filesystem::path& path, const std::string& text) {
    std::ofstream out(path);
    out << text;
    if (!out.flush()) throw std::runtime_error("make_tls_files: cannot write " + path.string());
}

class Openssl {
public:
    explicit Openssl(std::filesystem::path dir) : dir_(std::move(dir)), config_((dir_ / "openssl.cnf").string()) {
        write_file(config_, config_text(dir_));
    }

    std::string path(const std::string& name) const { return (dir_ / name).string(); }

    /// A new EC P-256 key NAME.key and a certificate NAME.crt with `subject` and the
    /// extensions of `section`, self-signed, or signed by ca.crt when `by_ca`.
    void certificate(const std::string& name, const std::string& subject, const std::string& section, bool by_ca) {
        std::vector<std::string> argv{"openssl",
                                      "req",
                                      "-config",
                                      config_,
                                      "-x509",
                                      "-newkey",
                                      "ec",
                                      "-pkeyopt",
                                      "ec_paramgen_curve:prime256v1",
                                      "-noenc",
                                      "-keyout",
                                      path(name + ".key"),
                                      "-out",
                                      path(name + ".crt"),
                                      "-days",
                                      "2",
                                      "-subj",
                                      subject,
                                      "-extensions",
                                      section};
        if (by_ca) argv.insert(argv.end(), {"-CA", path("ca.crt"), "-CAkey", path("ca.key")});
        run(name, argv);
    }

    /// NAME.key and NAME.crt with the server's extensions, signed by ca.crt for a day in 2020.
    void expired_certificate(const std::string& name) {
        write_file(dir_ / "index.txt", "");
        write_file(dir_ / "serial", "1000\n");
        run(name + " request",
            {"openssl", "req", "-config", config_, "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
             "-noenc", "-keyout", path(name + ".key"), "-out", path(name + ".csr"), "-subj", "/CN=127.0.0.1"});
        run(name, {"openssl", "ca", "-config", config_, "-batch", "-notext", "-in", path(name + ".csr"), "-out",
                   path(name + ".crt"), "-cert", path("ca.crt"), "-keyfile", path("ca.key"), "-startdate",
                   "20200101000000Z", "-enddate", "20200102000000Z"});
    }

private:
    static void run(const std::string& step, const std::vector<std::string>& argv) {
        const auto r = run_process(argv);
        if (r.exit_code != 0)
            throw std::runtime_error("make_tls_files: openssl failed making " + step + " (exit " +
                                     std::to_string(r.exit_code) + "): " + r.out + r.err);
    }

    std::filesystem::path dir_;
    std::string config_;
};

/// The process's files and the directory they live in, removed when the process exits.
struct SharedFiles {
    SharedFiles() : dir(detail::make_temp_dir("tls")) {
        try {
            files = make_tls_files(dir);
        } catch (...) {
            remove();
            throw;
        }
    }
    ~SharedFiles() { remove(); }
    SharedFiles(const SharedFiles&) = delete;
    SharedFiles& operator=(const SharedFiles&) = delete;
    void remove() noexcept {
        std::error_code ignored;
        std::filesystem::remove_all(dir, ignored);
    }

    std::filesystem::path dir;
    TlsFiles files;
};

}  // namespace

TlsFiles make_tls_files(const std::filesystem::path& dir) {
    Openssl ssl(dir);
    ssl.certificate("ca", "/CN=fencelock test CA", "ca_ext", false);
    ssl.certificate("other_ca", "/CN=fencelock unrelated CA", "ca_ext", false);
    ssl.certificate("server", "/CN=127.0.0.1", "server_ext", true);
    ssl.certificate("client", "/CN=fencelock test client", "client_ext", true);
    ssl.certificate("wrong_host", "/CN=wrong.example", "wrong_host_ext", true);
    ssl.expired_certificate("expired");
    std::error_code ignored;
    std::filesystem::remove(dir / "other_ca.key", ignored);  // nothing is ever signed with it
    return TlsFiles{.dir = dir,
                    .ca_cert = ssl.path("ca.crt"),
                    .server_cert = ssl.path("server.crt"),
                    .server_key = ssl.path("server.key"),
                    .client_cert = ssl.path("client.crt"),
                    .client_key = ssl.path("client.key"),
                    .expired_cert = ssl.path("expired.crt"),
                    .expired_key = ssl.path("expired.key"),
                    .wrong_host_cert = ssl.path("wrong_host.crt"),
                    .wrong_host_key = ssl.path("wrong_host.key"),
                    .other_ca_cert = ssl.path("other_ca.crt")};
}

const TlsFiles& shared_tls_files() {
    // A function-local static: made by the first caller, under the initialization lock that
    // makes concurrent first calls wait; a throw leaves it unmade for the next call to retry.
    static const SharedFiles shared;
    return shared.files;
}

}  // namespace fencelock::local
