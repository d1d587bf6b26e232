// Dependencies point down. Every quoted #include of the library, the public headers and the
// tools is checked against one table of layers; a file may include its own layer and those
// below it, never one above. A new folder or public header must be placed in the table, so
// nothing slips in unplaced.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <vector>

namespace fencelock {
namespace {

namespace fs = std::filesystem;

// Lower number: lower layer.
enum Layer { common = 0, redis = 1, lock = 2, store = 3, queue = 4, obs = 5, tools = 6 };

const char* name(int layer) {
    static const char* names[] = {"common", "redis", "lock", "store", "queue", "obs", "tools"};
    return names[layer];
}

// Public headers by the layer whose vocabulary they are.
const std::map<std::string, Layer> public_headers = {
    {"backoff.hpp", common},     {"duration.hpp", common},     {"error.hpp", common},
    {"limits.hpp", common},      {"redis_url.hpp", common},    {"types.hpp", common},
    {"version.hpp", common},
    {"log_value.hpp", common},   {"store_observer.hpp", store},
    {"admin.hpp", lock},         {"client.hpp", lock},         {"fencelock.hpp", lock},
    {"keeper.hpp", lock},        {"async_client.hpp", lock},
    {"observer.hpp", lock},      {"options.hpp", lock},        {"outcomes.hpp", lock},
    {"store.hpp", store},        {"store_error.hpp", store},   {"store_options.hpp", store},
    {"store_outbox.hpp", store}, {"store_text.hpp", store},    {"queue.hpp", queue},
    {"queue_job.hpp", queue},    {"queue_observer.hpp", queue}, {"queue_processor.hpp", queue},
    {"logging.hpp", obs},        {"metrics.hpp", obs},         {"queue_metrics.hpp", obs},
};

// Source folders (paths relative to the repository) by layer.
const std::map<std::string, Layer> folders = {
    {"src/common", common}, {"src/redis", redis}, {"src/lock", lock}, {"src/store", store},
    {"src/queue", queue},   {"src/obs", obs},     {"tools", tools},
};

/// The layer of an include path as a file writes it, or nullopt for a header that is not
/// fencelock's (a system or third-party header).
std::optional<Layer> layer_of_include(const std::string& include) {
    if (include.starts_with("fencelock/")) {
        auto it = public_headers.find(include.substr(10));
        if (it == public_headers.end()) return std::nullopt;
        return it->second;
    }
    for (const auto& [folder, layer] : folders) {
        const std::string prefix = folder.starts_with("src/") ? folder.substr(4) + "/" : folder + "/";
        if (include.starts_with(prefix)) return layer;
    }
    return std::nullopt;
}

struct Violation {
    std::string file, include;
    int from, to;
};

std::vector<std::pair<fs::path, Layer>> files_to_check(const fs::path& root) {
    std::vector<std::pair<fs::path, Layer>> out;
    for (const auto& [folder, layer] : folders)
        for (const auto& e : fs::recursive_directory_iterator(root / folder))
            if (e.path().extension() == ".cpp" || e.path().extension() == ".hpp") out.emplace_back(e.path(), layer);
    for (const auto& e : fs::directory_iterator(root / "include/fencelock")) {
        const auto it = public_headers.find(e.path().filename().string());
        EXPECT_NE(it, public_headers.end()) << e.path() << " is a public header the layer table does not place";
        if (it != public_headers.end()) out.emplace_back(e.path(), it->second);
    }
    return out;
}

TEST(Layering, EveryIncludePointsDown) {
    const fs::path root = SOURCE_DIR;
    const std::regex include_line(R"re(^\s*#\s*include\s*"([^"]+)")re");
    std::vector<Violation> violations;
    std::size_t checked = 0;
    for (const auto& [path, layer] : files_to_check(root)) {
        std::ifstream in(path);
        std::string line;
        const bool is_public = path.parent_path() == root / "include/fencelock";
        while (std::getline(in, line)) {
            std::smatch m;
            if (!std::regex_search(line, m, include_line)) continue;
            const std::string include = m[1];
            ++checked;
            const auto to = layer_of_include(include);
            // Public headers stand alone: nothing of src/ may show through them.
            if (is_public && !include.starts_with("fencelock/"))
                violations.push_back({fs::relative(path, root).string(), include, layer, -1});
            else if (to && *to > layer)
                violations.push_back({fs::relative(path, root).string(), include, layer, *to});
        }
    }
    EXPECT_GT(checked, 200u) << "the scan found too few includes (" << checked << "): is SOURCE_DIR right?";
    for (const auto& v : violations)
        ADD_FAILURE() << v.file << " (" << name(v.from) << ") includes \"" << v.include << "\" ("
                      << (v.to < 0 ? "internal, from a public header" : name(v.to)) << ")";
}

// The table itself must say what the code does: a lock file including a store header is
// what the check exists to catch.
TEST(Layering, TheTableRanksTheLayers) {
    EXPECT_EQ(layer_of_include("store/sql.hpp"), store);
    EXPECT_EQ(layer_of_include("lock/keeper.hpp"), lock);
    EXPECT_EQ(layer_of_include("common/log.hpp"), common);
    EXPECT_EQ(layer_of_include("fencelock/client.hpp"), lock);
    EXPECT_EQ(layer_of_include("hiredis/hiredis.h"), std::nullopt);
    EXPECT_GT(layer_of_include("store/sql.hpp"), layer_of_include("lock/keeper.hpp"));
}

}  // namespace
}  // namespace fencelock
