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
#include <set>
#include <string>
#include <vector>

namespace fencelock {
namespace {

namespace fs = std::filesystem;

// Lower number: lower layer.
// lease: the backend-neutral core, below any backend's transport; coordinator: the seam and
// its implementations (coordinator/redis/); lock: the drivers over the seam.
enum Layer { common = 0, lease, redis, coordinator, lock, store, queue, obs, tools };

const char* name(int layer) {
    static const char* names[] = {"common", "lease", "redis", "coordinator", "lock", "store", "queue", "obs", "tools"};
    return names[layer];
}

// Public headers by the layer whose vocabulary they are.
const std::map<std::string, Layer> public_headers = {
    {"backoff.hpp", common},      {"duration.hpp", common},      {"error.hpp", common},
    {"limits.hpp", common},       {"redis_url.hpp", common},     {"types.hpp", common},
    {"version.hpp", common},      {"result.hpp", common},        {"option_error.hpp", common},
    {"log_value.hpp", common},    {"store_observer.hpp", store}, {"observer.hpp", lease},
    {"options.hpp", lease},       {"outcomes.hpp", lease},       {"lock_state.hpp", lease},
    {"admin_records.hpp", lease}, {"admin.hpp", lock},           {"client.hpp", lock},
    {"fencelock.hpp", lock},      {"keeper.hpp", lock},          {"async_client.hpp", lock},
    {"store.hpp", store},         {"store_error.hpp", store},    {"store_options.hpp", store},
    {"store_outbox.hpp", store},  {"store_text.hpp", store},     {"queue.hpp", queue},
    {"queue_job.hpp", queue},     {"queue_observer.hpp", queue}, {"queue_processor.hpp", queue},
    {"logging.hpp", obs},         {"metrics.hpp", obs},          {"queue_metrics.hpp", obs},
};

// Source folders (paths relative to the repository) by layer.
const std::map<std::string, Layer> folders = {
    {"src/common", common}, {"src/lease", lease}, {"src/redis", redis}, {"src/coordinator", coordinator},
    {"src/lock", lock},     {"src/store", store}, {"src/queue", queue}, {"src/obs", obs},
    {"tools", tools},
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

// Every quoted #include of `file`, and every <...> one that names a fencelock header (src/ is on
// the include path, so <redis/reply.hpp> would compile as well as "redis/reply.hpp").
std::vector<std::string> includes_of(const fs::path& file) {
    const std::regex include_line(R"re(^\s*#\s*include\s*([<"])([^">]+)[">])re");
    std::ifstream in(file);
    std::vector<std::string> out;
    std::string line;
    std::smatch m;
    while (std::getline(in, line))
        if (std::regex_search(line, m, include_line) && (m[1] == "\"" || layer_of_include(m[2]))) out.push_back(m[2]);
    return out;
}

std::vector<fs::path> sources_under(const fs::path& folder, bool recursive = true) {
    std::vector<fs::path> out;
    const auto take = [&](const fs::path& p) {
        if (p.extension() == ".cpp" || p.extension() == ".hpp") out.push_back(p);
    };
    if (recursive)
        for (const auto& e : fs::recursive_directory_iterator(folder)) take(e.path());
    else
        for (const auto& e : fs::directory_iterator(folder)) take(e.path());
    return out;
}

TEST(Layering, EveryIncludePointsDown) {
    const fs::path root = SOURCE_DIR;
    std::vector<Violation> violations;
    std::size_t checked = 0;
    for (const auto& [path, layer] : files_to_check(root)) {
        const bool is_public = path.parent_path() == root / "include/fencelock";
        for (const auto& include : includes_of(path)) {
            ++checked;
            const auto to = layer_of_include(include);
            // Public headers stand alone: nothing of src/ may show through them.
            if (is_public && !include.starts_with("fencelock/"))
                violations.push_back({fs::relative(path, root).string(), include, layer, -1});
            else if (to && *to > layer) violations.push_back({fs::relative(path, root).string(), include, layer, *to});
        }
    }
    EXPECT_GT(checked, 200u) << "the scan found too few includes (" << checked << "): is SOURCE_DIR right?";
    for (const auto& v : violations)
        ADD_FAILURE() << v.file << " (" << name(v.from) << ") includes \"" << v.include << "\" ("
                      << (v.to < 0 ? "internal, from a public header" : name(v.to)) << ")";
}

bool names_a_backend(const std::string& include) {
    return include.starts_with("redis/") || include.starts_with("coordinator/redis/") ||
           include.starts_with("coordinator/etcd/");
}

// Drivers that still reach past the seam into Redis: none since the keeper and the async client
// went over it. The list only shrinks: a listed file that no longer includes redis/ or
// coordinator/redis/, or no longer exists, fails the test until it is taken off.
const std::set<std::string> drivers_not_yet_over_the_seam = {};

std::vector<std::string> backend_includes(const fs::path& file) {
    std::vector<std::string> out;
    for (const auto& include : includes_of(file))
        if (names_a_backend(include)) out.push_back(include);
    return out;
}

// A driver speaks to its coordinator through the seam only: no Redis transport, no Redis
// coordinator. That is what lets a second backend take Redis's place under the same drivers.
TEST(Layering, DriversNeverNameABackend) {
    const fs::path root = SOURCE_DIR;
    for (const auto& listed : drivers_not_yet_over_the_seam)
        EXPECT_TRUE(fs::exists(root / listed)) << listed << " is gone: take it off the list";
    std::size_t drivers = 0;
    for (const auto& path : sources_under(root / "src/lock")) {
        ++drivers;
        const std::string file = fs::relative(path, root).string();
        const auto backend = backend_includes(path);
        if (drivers_not_yet_over_the_seam.contains(file)) {
            EXPECT_FALSE(backend.empty()) << file << " no longer names a backend: take it off the list";
            continue;
        }
        for (const auto& include : backend) ADD_FAILURE() << file << " (a driver) includes \"" << include << "\"";
    }
    EXPECT_GT(drivers, 5u) << "the scan found too few driver files: is SOURCE_DIR right?";
}

// The lease core is pure: no transport, no coordinator, no driver and no client façade.
TEST(Layering, TheLeaseCoreNamesNoBackendAndNoFacade) {
    const fs::path root = SOURCE_DIR;
    const std::vector<std::string> above = {"redis/",           "coordinator/",           "lock/",
                                            "fencelock/client", "fencelock/async_client", "fencelock/admin.hpp",
                                            "fencelock/keeper", "fencelock/fencelock"};
    std::size_t files = 0;
    for (const auto& path : sources_under(root / "src/lease")) {
        ++files;
        for (const auto& include : includes_of(path))
            for (const auto& prefix : above)
                if (include.starts_with(prefix))
                    ADD_FAILURE() << fs::relative(path, root).string() << " (the lease core) includes \"" << include
                                  << "\"";
    }
    EXPECT_GT(files, 8u) << "the scan found too few lease core files: is SOURCE_DIR right?";
    // And the table ranks it so: below the transport, the coordinators and the façade.
    const auto lease_layer = layer_of_include("lease/acquire_loop.hpp");
    ASSERT_TRUE(lease_layer && layer_of_include("redis/reply.hpp") && layer_of_include("fencelock/client.hpp") &&
                layer_of_include("coordinator/redis/keys.hpp"));
    EXPECT_LT(*lease_layer, *layer_of_include("redis/reply.hpp"));
    EXPECT_LT(*lease_layer, *layer_of_include("fencelock/client.hpp"));
    EXPECT_LT(*lease_layer, *layer_of_include("coordinator/redis/keys.hpp"));
}

// The seam itself (src/coordinator/, outside redis/) names no backend: a second coordinator
// implements it without Redis coming along.
TEST(Layering, TheSeamNamesNoBackend) {
    const fs::path root = SOURCE_DIR;
    std::size_t files = 0;
    for (const auto& path : sources_under(root / "src/coordinator", false)) {
        ++files;
        for (const auto& include : backend_includes(path))
            ADD_FAILURE() << fs::relative(path, root).string() << " (the seam) includes \"" << include << "\"";
    }
    EXPECT_GE(files, 1u) << "no seam header found in src/coordinator";
}

// Every source folder has a place in the table, so none escapes the checks.
TEST(Layering, EverySourceFolderIsPlaced) {
    const fs::path root = SOURCE_DIR;
    for (const auto& e : fs::directory_iterator(root / "src"))
        if (e.is_directory())
            EXPECT_TRUE(folders.contains("src/" + e.path().filename().string()))
                << e.path().filename() << " is a source folder the layer table does not place";
}

// The table itself must say what the code does: a lock file including a store header is
// what the check exists to catch.
TEST(Layering, TheTableRanksTheLayers) {
    EXPECT_EQ(layer_of_include("store/sql.hpp"), store);
    EXPECT_EQ(layer_of_include("lock/renewal_keeper.hpp"), lock);
    EXPECT_EQ(layer_of_include("common/log.hpp"), common);
    EXPECT_EQ(layer_of_include("fencelock/client.hpp"), lock);
    EXPECT_EQ(layer_of_include("hiredis/hiredis.h"), std::nullopt);
    EXPECT_GT(layer_of_include("store/sql.hpp"), layer_of_include("lock/renewal_keeper.hpp"));
}

}  // namespace
}  // namespace fencelock
