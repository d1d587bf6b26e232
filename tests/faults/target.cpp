#include "faults/target.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <system_error>

#include "faults/json_lines.hpp"
#include "faults/store_target.hpp"

namespace fencelock::faults {

std::string_view to_string(TargetStatus s) noexcept {
    switch (s) {
        case TargetStatus::applied: return "applied";
        case TargetStatus::stale: return "stale";
        case TargetStatus::duplicate: return "duplicate";
    }
    return "stale";
}

namespace {

// Holds flock(LOCK_EX) on dir/lock for its lifetime.
class DirLock {
public:
    explicit DirLock(const std::filesystem::path& dir) {
        fd_ = ::open((dir / "lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "open target lock");
        while (::flock(fd_, LOCK_EX) != 0)
            if (errno != EINTR) throw std::system_error(errno, std::generic_category(), "flock");
    }
    ~DirLock() { ::close(fd_); }  // closing drops the lock
    DirLock(const DirLock&) = delete;
    DirLock& operator=(const DirLock&) = delete;

private:
    int fd_ = -1;
};

std::string hex(const std::string& s) {
    static const char digits[] = "0123456789abcdef";
    std::string out;
    for (unsigned char c : s) {
        out += digits[c >> 4];
        out += digits[c & 15];
    }
    return out;
}

std::string slurp(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// Writes through a temporary file and rename(2): a reader never sees half a record.
void replace_file(const std::filesystem::path& p, const std::string& content) {
    const auto tmp = p.string() + ".tmp";
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        out << content;
        if (!out) throw std::runtime_error("cannot write " + tmp);
    }
    std::filesystem::rename(tmp, p);
}

struct Row {
    std::uint64_t last_fence = 0;
    std::string value;
};

// Record file: first line the last fence, the rest the value (values hold no newline).
Row load_row(const std::filesystem::path& dir, const std::string& resource) {
    const auto p = dir / ("res-" + hex(resource));
    Row row;
    if (!std::filesystem::exists(p)) return row;
    const std::string text = slurp(p);
    const auto nl = text.find('\n');
    row.last_fence = std::stoull(text.substr(0, nl));
    if (nl != std::string::npos) row.value = text.substr(nl + 1);
    return row;
}

}  // namespace

std::unique_ptr<FileRegister> FileRegister::create(const std::filesystem::path& dir, bool fencing) {
    std::filesystem::create_directories(dir);
    replace_file(dir / "mode", fencing ? "fencing=on\n" : "fencing=off\n");
    replace_file(dir / "accepted.jsonl", "");
    replace_file(dir / "keys", "");
    return std::unique_ptr<FileRegister>(new FileRegister(dir, fencing));
}

std::unique_ptr<FileRegister> FileRegister::open(const std::filesystem::path& dir) {
    const std::string mode = slurp(dir / "mode");
    if (mode != "fencing=on\n" && mode != "fencing=off\n")
        throw std::runtime_error("no fenced register in " + dir.string());
    return std::unique_ptr<FileRegister>(new FileRegister(dir, mode == "fencing=on\n"));
}

std::string FileRegister::read(const std::string& resource) {
    DirLock lock(dir_);
    return load_row(dir_, resource).value;
}

std::uint64_t FileRegister::last_fence(const std::string& resource) {
    DirLock lock(dir_);
    return load_row(dir_, resource).last_fence;
}

// The fencing rule of the real stores: accept only a fence newer than the last accepted one,
// checked and applied under one lock. With fencing off every write is accepted: that is the
// target without a fence check the negative controls need.
TargetWrite FileRegister::write(const std::string& resource, const std::string& value, std::uint64_t fence,
                                const std::string& idempotency_key) {
    if (value.find('\n') != std::string::npos) throw std::invalid_argument("register values hold no newline");
    DirLock lock(dir_);
    Row row = load_row(dir_, resource);
    if (fencing_ && fence <= row.last_fence) return {TargetStatus::stale, row.last_fence};
    std::set<std::string> keys;
    {
        std::stringstream ss(slurp(dir_ / "keys"));
        for (std::string k; std::getline(ss, k);) keys.insert(k);
    }
    if (!idempotency_key.empty() && keys.contains(idempotency_key)) return {TargetStatus::duplicate, row.last_fence};

    std::ifstream count_in(dir_ / "accepted.jsonl");
    std::int64_t seq = 1;
    for (std::string l; std::getline(count_in, l);) ++seq;
    JsonLine line;
    line.set("seq", seq).set("res", resource).set("fence", static_cast<std::int64_t>(fence));
    line.set("value", value).set("key", idempotency_key);
    {
        std::ofstream log(dir_ / "accepted.jsonl", std::ios::app);
        log << line.dump() << '\n';
    }
    if (!idempotency_key.empty()) {
        std::ofstream k(dir_ / "keys", std::ios::app);
        k << idempotency_key << '\n';
    }
    // Unfenced, the register still remembers the largest fence seen, for reporting.
    row.last_fence = fencing_ ? fence : std::max(row.last_fence, fence);
    row.value = value;
    replace_file(dir_ / ("res-" + hex(resource)), std::to_string(row.last_fence) + "\n" + row.value);
    return {TargetStatus::applied, row.last_fence};
}

std::vector<AcceptedWrite> FileRegister::accepted() {
    DirLock lock(dir_);
    std::vector<AcceptedWrite> out;
    std::ifstream in(dir_ / "accepted.jsonl");
    for (std::string l; std::getline(in, l);) {
        auto line = JsonLine::parse(l);
        if (!line) continue;
        out.push_back({static_cast<std::uint64_t>(line->num("seq")), line->str("res"),
                       static_cast<std::uint64_t>(line->num("fence")), line->str("value"), line->str("key")});
    }
    return out;
}

std::string_view to_string(Backend b) noexcept {
    switch (b) {
        case Backend::file: return "file";
        case Backend::sqlite: return "sqlite";
        case Backend::postgres: return "postgres";
    }
    return "file";
}

std::string target_spec(bool fencing, const std::string& location) { return (fencing ? "on " : "off ") + location; }

std::unique_ptr<Target> open_target(const std::string& spec) {
    const auto space = spec.find(' ');
    const std::string mode = spec.substr(0, space);
    if (space == std::string::npos || (mode != "on" && mode != "off"))
        throw std::runtime_error("bad target spec: " + spec);
    const bool fencing = mode == "on";
    const std::string location = spec.substr(space + 1);
    if (location.starts_with("sqlite://") || location.starts_with("postgresql://"))
        return StoreTarget::open(location, fencing);
    auto file = FileRegister::open(location);
    if (file->fencing() != fencing) throw std::runtime_error("target in " + location + " has another fencing mode");
    return file;
}

History collect(Target& target, std::vector<Op> ops) {
    History h;
    h.accepted = target.accepted();
    std::set<std::string> resources;
    for (const auto& w : h.accepted) resources.insert(w.resource);
    for (const auto& op : ops)
        if (op.kind == OpKind::write) resources.insert(op.resource);
    for (const auto& r : resources) h.final_values[r] = target.read(r);
    h.ops = std::move(ops);
    return h;
}

}  // namespace fencelock::faults
