// The demo's timeline as a reader sees it: `fencelock demo` writes the page, Debian's headless
// Chromium renders it, and the screenshot must show each outcome colour of the legend (accepted,
// rejected, lost update) in the legend and on the runs below it; the page must mark every lost
// update and every rejected write the report counts, and the stale writes behind lost updates.
#include <png.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "demo/timeline.hpp"
#include "local_servers/child_process.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

namespace fencelock::test_support {
namespace {

using local::run_process;
using nlohmann::json;

std::string find_on_path(const std::vector<std::string>& names) {
    const char* path = std::getenv("PATH");
    std::istringstream dirs(path ? path : "");
    for (std::string dir; std::getline(dirs, dir, ':');)
        for (const auto& name : names)
            if (::access((dir + "/" + name).c_str(), X_OK) == 0) return dir + "/" + name;
    return {};
}

struct Image {
    png_uint_32 width = 0, height = 0;
    std::vector<png_byte> rgb;  ///< 3 bytes a pixel, row by row
};

Image read_png(const std::filesystem::path& file) {
    png_image png{};
    png.version = PNG_IMAGE_VERSION;
    Image image;
    if (!png_image_begin_read_from_file(&png, file.c_str())) throw std::runtime_error(png.message);
    png.format = PNG_FORMAT_RGB;
    image.width = png.width, image.height = png.height;
    image.rgb.resize(PNG_IMAGE_SIZE(png));
    if (!png_image_finish_read(&png, nullptr, image.rgb.data(), 0, nullptr)) throw std::runtime_error(png.message);
    return image;
}

// The rows of the image holding pixels of `hex` ("#rrggbb"), within a small tolerance for
// colour management; filled shapes keep their exact colour inside the antialiased edge.
std::vector<int> rows_with(const Image& image, const std::string& hex, int& pixels) {
    const long value = std::strtol(hex.c_str() + 1, nullptr, 16);
    const int want[3] = {static_cast<int>(value >> 16 & 0xff), static_cast<int>(value >> 8 & 0xff),
                         static_cast<int>(value & 0xff)};
    std::vector<int> rows;
    pixels = 0;
    for (png_uint_32 y = 0; y < image.height; ++y) {
        bool found = false;
        for (png_uint_32 x = 0; x < image.width; ++x) {
            const png_byte* p = &image.rgb[(y * image.width + x) * 3];
            if (std::abs(p[0] - want[0]) <= 6 && std::abs(p[1] - want[1]) <= 6 && std::abs(p[2] - want[2]) <= 6) {
                ++pixels;
                found = true;
            }
        }
        if (found) rows.push_back(static_cast<int>(y));
    }
    return rows;
}

// The legend is the page's first use of the outcome colours and is 60 px tall (two lines): a
// colour seen further below its first row than that is on a run's timeline.
constexpr int legend_height = 60;

std::size_t count(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
}

TEST(DemoTimelineTest, ScreenshotShowsAcceptedRejectedAndLostWrites) {
    const std::string chromium = find_on_path({"chromium", "chromium-browser"});
    ASSERT_FALSE(chromium.empty()) << "chromium not found on PATH: run scripts/install-deps.sh";
    const TempDir dir("fencelock-timeline");
    const auto page = dir.path() / "timeline.html";
    const auto shot = dir.path() / "timeline.png";

    auto demo =
        run_process({FENCELOCK_CLI, "demo", "--json", "--duration", "8s", "--seed", "7", "--timeline", page.string()});
    ASSERT_EQ(demo.exit_code, 0) << demo.err;
    const json report = json::parse(demo.out);
    const json& fenced = report.at("fenced");
    const json& unfenced = report.at("unfenced");
    std::printf("demo fenced:   %s\ndemo unfenced: %s\n", fenced.dump().c_str(), unfenced.dump().c_str());
    ASSERT_GT(unfenced["lost_updates"].get<int>(), 0) << "the seeded faults must show the damage";
    ASSERT_GT(fenced["stale_rejected"].get<int>(), 0);

    std::ifstream in(page);
    std::stringstream html;
    html << in.rdbuf();
    // One mark per counted outcome, plus the legend's own.
    EXPECT_EQ(count(html.str(), "class='mark-lost'"),
              1 + fenced["lost_updates"].get<std::size_t>() + unfenced["lost_updates"].get<std::size_t>());
    EXPECT_EQ(count(html.str(), "class='mark-rejected'"),
              1 + fenced["stale_rejected"].get<std::size_t>() + unfenced["stale_rejected"].get<std::size_t>());
    // Each lost update has a culprit, the stale write of it and what overwrote it (one culprit
    // may be behind several); found from the workers' history, so at least one is drawn.
    const auto culprits = count(html.str(), "class='mark-culprit'") - 1;  // the legend's
    EXPECT_GE(culprits, 1u);
    EXPECT_LE(culprits, unfenced["lost_updates"].get<std::size_t>());
    EXPECT_GT(count(html.str(), "class='overwrite-link'"), 0u);

    auto browser = run_process({"timeout", "120", chromium, "--headless", "--no-sandbox", "--disable-gpu",
                                "--user-data-dir=" + (dir.path() / "profile").string(), "--screenshot=" + shot.string(),
                                "--window-size=1400,900", "file://" + page.string()});
    ASSERT_EQ(browser.exit_code, 0) << browser.err;
    ASSERT_TRUE(std::filesystem::exists(shot)) << browser.err;
    if (const char* keep = std::getenv("FENCELOCK_TIMELINE_SCREENSHOT"))  // for a person to look at
        std::filesystem::copy_file(shot, keep, std::filesystem::copy_options::overwrite_existing);
    const Image image = read_png(shot);
    ASSERT_EQ(image.width, 1400u);

    for (const auto& [name, colour] :
         {std::pair{"accepted", demo::accepted_colour}, std::pair{"rejected", demo::rejected_colour},
          std::pair{"lost update", demo::lost_colour}}) {
        int pixels = 0;
        const auto rows = rows_with(image, colour, pixels);
        ASSERT_FALSE(rows.empty()) << name << " (" << colour << ") missing from the screenshot";
        std::printf("%s %s: %d pixels, rows %d to %d\n", name, colour, pixels, rows.front(), rows.back());
        EXPECT_GE(pixels, 300) << name << " (" << colour << "): fewer pixels than a legend swatch and one mark";
        EXPECT_GT(rows.back() - rows.front(), legend_height) << name << " (" << colour << ") only in the legend";
    }
}

}  // namespace
}  // namespace fencelock::test_support
