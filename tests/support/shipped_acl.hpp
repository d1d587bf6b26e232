#pragma once
// ops/redis/fencelock.acl as the tests load it: its user lines read from the source tree, each
// placeholder password replaced by a test one. The ACL tests check the file line by line; the
// tls.* suites (support/managed_redis.hpp) run the lock and queue contracts as its users.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace fencelock::test_support {

inline const std::string shipped_file = std::string(SOURCE_DIR) + "/ops/redis/fencelock.acl";
inline const std::string locks_user = "fencelock-locks", queue_user = "fencelock-queue", admin_user = "fencelock-admin";
struct AclUser {
    std::string name;
    std::vector<std::string> rules;  // after `user NAME`
};

/// The file's `user` lines, one per non-blank line.
inline std::vector<AclUser> shipped_users() {
    std::ifstream in(shipped_file);
    std::vector<AclUser> users;
    for (std::string line; std::getline(in, line);) {
        std::istringstream words(line);
        std::string word;
        AclUser u;
        if (!(words >> word)) continue;
        EXPECT_EQ(word, "user") << "an aclfile has user lines only: " << line;
        words >> u.name;
        while (words >> word) u.rules.push_back(word);
        users.push_back(std::move(u));
    }
    return users;
}

inline std::string password_of(const std::string& user) { return "test-pw-" + user; }

/// A placeholder password: '#' and anything but the 64 lowercase hex digits of a SHA-256.
inline bool is_placeholder(const std::string& rule) {
    return rule.starts_with("#") &&
           (rule.size() != 65 || rule.find_first_not_of("0123456789abcdef", 1) != std::string::npos);
}

inline std::vector<std::string> with_test_password(const AclUser& u) {
    std::vector<std::string> rules;
    for (const auto& r : u.rules) rules.push_back(is_placeholder(r) ? ">" + password_of(u.name) : r);
    return rules;
}

/// The users as RedisServerOptions::acl_users lines ("NAME RULES..."), test passwords in place.
inline std::vector<std::string> shipped_acl_lines() {
    std::vector<std::string> lines;
    for (const AclUser& u : shipped_users()) {
        std::string line = u.name;
        for (const auto& rule : with_test_password(u)) line += " " + rule;
        lines.push_back(line);
    }
    return lines;
}

}  // namespace fencelock::test_support
