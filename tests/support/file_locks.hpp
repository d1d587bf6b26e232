#pragma once
// Who holds POSIX locks on a file, from /proc/locks: for a failure message when a SQLite
// database stays locked (its write lock is a lock on the -shm file in WAL mode, or on the
// database file itself). Each line names the holder's pid, state letter and command line.
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace fencelock::test_support {

inline std::string file_lock_holders(const std::vector<std::string>& paths) {
    std::vector<std::string> ids;  // "MAJ:MIN:INODE" as /proc/locks writes them (hex device numbers)
    for (const auto& p : paths) {
        struct stat st {};
        if (::stat(p.c_str(), &st) != 0) continue;
        char id[64];
        std::snprintf(id, sizeof id, "%02x:%02x:%lu", major(st.st_dev), minor(st.st_dev),
                      static_cast<unsigned long>(st.st_ino));
        ids.emplace_back(id);
    }
    std::ifstream locks("/proc/locks");
    std::ostringstream out;
    for (std::string line; std::getline(locks, line);) {
        std::istringstream fields(line);
        std::string n, cls, mode, type, pid, id;
        fields >> n >> cls >> mode >> type >> pid >> id;
        bool ours = false;
        for (const auto& want : ids) ours = ours || id == want;
        if (!ours) continue;
        std::ifstream stat("/proc/" + pid + "/stat"), cmd("/proc/" + pid + "/cmdline");
        std::string s, argv;
        std::getline(stat, s);
        std::getline(cmd, argv, '\0');
        const auto paren = s.rfind(')');
        const char state = paren != std::string::npos && paren + 2 < s.size() ? s[paren + 2] : '?';
        out << "pid " << pid << " (state " << state << ", " << argv << ") holds " << line << "\n";
    }
    const std::string text = out.str();
    return text.empty() ? "no process holds a lock on them\n" : text;
}

}  // namespace fencelock::test_support
