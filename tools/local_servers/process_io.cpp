#include "local_servers/process_io.hpp"

#include <spawn.h>
#include <stdlib.h>

#include <array>
#include <cstdio>
#include <memory>
#include <stdexcept>

extern char** environ;

namespace fencelock::local::detail {
namespace {

std::string quote(const std::string& s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

}  // namespace

pid_t spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    std::vector<char*> envs;
    for (char** e = environ; *e != nullptr; ++e) envs.push_back(*e);
    for (const auto& e : env) envs.push_back(const_cast<char*>(e.c_str()));
    envs.push_back(nullptr);
    pid_t pid = -1;
    if (posix_spawnp(&pid, args[0], nullptr, nullptr, args.data(), envs.data()) != 0) return -1;
    return pid;
}

std::string capture(const std::vector<std::string>& argv) {
    std::string cmd;
    for (const auto& a : argv) cmd += quote(a) + " ";
    cmd += " 2>&1";
    std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
    if (!pipe) throw std::runtime_error("popen failed: " + cmd);
    std::string out;
    std::array<char, 4096> buf{};
    size_t n;
    while ((n = fread(buf.data(), 1, buf.size(), pipe.get())) > 0) out.append(buf.data(), n);
    while (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
}

std::string make_temp_dir(const std::string& what) {
    std::string tmpl = "/tmp/fencelock-" + what + "-XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    return tmpl;
}

}  // namespace fencelock::local::detail
