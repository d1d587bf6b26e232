#include "local_servers/child_process.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace fencelock::local {
namespace {

std::vector<char*> c_strings(std::vector<std::string>& strings) {
    std::vector<char*> out;
    for (auto& s : strings) out.push_back(s.data());
    out.push_back(nullptr);
    return out;
}

std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

}  // namespace

int wait_process(pid_t pid) {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) return -1;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

pid_t start_process(const std::vector<std::string>& argv, const std::string& stdout_path,
                    const std::string& stderr_path) {
    std::vector<std::string> args = argv;
    auto cargs = c_strings(args);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    if (!stdout_path.empty())
        posix_spawn_file_actions_addopen(&actions, 1, stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (!stderr_path.empty())
        posix_spawn_file_actions_addopen(&actions, 2, stderr_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    pid_t pid = -1;
    int rc = posix_spawnp(&pid, cargs[0], &actions, nullptr, cargs.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) throw std::runtime_error("cannot start " + argv[0]);
    return pid;
}

ProcessResult run_process(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
    char out_tmpl[] = "/tmp/fencelock-out-XXXXXX";
    char err_tmpl[] = "/tmp/fencelock-err-XXXXXX";
    int out_fd = mkstemp(out_tmpl), err_fd = mkstemp(err_tmpl);
    std::vector<std::string> args = argv;
    auto cargs = c_strings(args);
    std::vector<std::string> envs;
    for (char** e = environ; *e != nullptr; ++e) envs.emplace_back(*e);
    envs.insert(envs.end(), env.begin(), env.end());
    auto cenv = c_strings(envs);

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out_fd, 1);
    posix_spawn_file_actions_adddup2(&actions, err_fd, 2);
    pid_t pid = -1;
    int rc = posix_spawnp(&pid, cargs[0], &actions, nullptr, cargs.data(), cenv.data());
    posix_spawn_file_actions_destroy(&actions);
    close(out_fd);
    close(err_fd);
    ProcessResult result;
    if (rc == 0) {
        result.exit_code = wait_process(pid);
        result.out = slurp(out_tmpl);
        result.err = slurp(err_tmpl);
    }
    unlink(out_tmpl);
    unlink(err_tmpl);
    if (rc != 0) throw std::runtime_error("cannot start " + argv[0]);
    return result;
}

}  // namespace fencelock::local
