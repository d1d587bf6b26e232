// Citations of the design document resolve. Code comments, docs and help texts cite parts of
// docs/DESIGN.md by name (`DESIGN.md, "Failure model"`, across a comment's line break too) or by
// a markdown link (`DESIGN.md#failure-model`); each must name a heading DESIGN.md has, so a
// renamed or dropped section cannot leave readers looking for a part that is gone. Markdown links
// between README.md and docs/*.md to `FILE.md#anchor` (and `#anchor` within a file) must reach a
// heading of their target too. Anchors are GitHub's: the heading's text lowercased, everything
// but letters, digits, `-`, `_` and spaces dropped, spaces turned into `-`, and `-1`, `-2`...
// appended to repeated ones. (docs/RUNBOOK.md's anchors that ops/ files name are checked by the
// test of those files.)
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace fencelock {
namespace {

namespace fs = std::filesystem;

std::string read_all(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
}

/// GitHub's anchor for a heading's text. Bytes outside ASCII are kept (letters of other scripts
/// stay in GitHub's anchors); no heading of ours has any.
std::string github_anchor(const std::string& text) {
    std::string anchor;
    for (unsigned char c : text) {
        if (std::isalnum(c) || c == '-' || c == '_' || c >= 0x80) anchor += static_cast<char>(std::tolower(c));
        else if (c == ' ') anchor += '-';
    }
    return anchor;
}

/// A document's headings: their text as rendered (inline code's backticks dropped) and the
/// anchors GitHub gives them, and in document order the anchors of its sections (every heading
/// but the title's). Lines inside fenced code blocks are no headings.
struct Headings {
    std::set<std::string> texts;
    std::set<std::string> anchors;
    std::vector<std::string> sections;
};

Headings headings_of(const std::string& markdown) {
    Headings found;
    std::map<std::string, int> seen;
    std::istringstream in(markdown);
    std::string line;
    bool in_code = false;
    static const std::regex heading(R"(^(#{1,6})[ \t]+(.*?)[ \t#]*$)");
    while (std::getline(in, line)) {
        if (line.starts_with("```")) in_code = !in_code;
        std::smatch m;
        if (in_code || !std::regex_match(line, m, heading)) continue;
        std::string text = m[2].str();
        std::erase(text, '`');
        found.texts.insert(text);
        std::string anchor = github_anchor(text);
        if (const int repeats = seen[anchor]++; repeats > 0) anchor += "-" + std::to_string(repeats);
        found.anchors.insert(anchor);
        if (m[1].length() > 1) found.sections.push_back(anchor);
    }
    return found;
}

/// The text with line breaks and the comment leaders after them (`//`, `///`, `--`, `#`, ` *`)
/// turned into one space, so a citation wrapped across comment lines reads as one.
std::string flattened(const std::string& text) {
    static const std::regex wrap(R"([ \t]*\r?\n[ \t]*(?:/{2,}|--|#+|\*)?[ \t]*)");
    return std::regex_replace(text, wrap, " ");
}

/// The first group of every match of `pattern` in `text`, in order.
std::vector<std::string> first_groups(const std::string& text, const std::regex& pattern) {
    std::vector<std::string> found;
    for (std::sregex_iterator it(text.begin(), text.end(), pattern), end; it != end; ++it)
        found.push_back((*it)[1].str());
    return found;
}

/// Names cited in `text` as the design's file name followed by `, "Name"`, ` "Name"` or
/// ` ("Name")`.
std::vector<std::string> cited_names(const std::string& text) {
    static const std::regex citation(R"re(DESIGN\.md(?:, ?| )\(?"([^"]+)")re");
    return first_groups(flattened(text), citation);
}

/// Anchors of links to the design's file name followed by `#anchor` in `text`.
std::vector<std::string> cited_anchors(const std::string& text) {
    static const std::regex link(R"(DESIGN\.md#([A-Za-z0-9_-]+))");
    return first_groups(text, link);
}

/// The anchors DESIGN.md's contents link to, in order: the `](#anchor)` links between its
/// `<!-- contents -->` and `<!-- /contents -->` lines.
std::vector<std::string> contents_anchors(const std::string& markdown) {
    const auto begin = markdown.find("<!-- contents -->");
    const auto end = markdown.find("<!-- /contents -->");
    if (begin == std::string::npos || end == std::string::npos || end < begin) return {};
    static const std::regex link(R"(\]\(#([^)\s]+)\))");
    return first_groups(markdown.substr(begin, end - begin), link);
}

/// Every file under `root` a citation may stand in: sources, docs, scripts, configuration.
/// Build trees and git's own files are left out.
std::vector<fs::path> tree_files(const fs::path& root) {
    std::vector<fs::path> files;
    auto it = fs::recursive_directory_iterator(root);
    for (auto end = fs::recursive_directory_iterator(); it != end; ++it) {
        const std::string name = it->path().filename().string();
        if (it->is_directory() && (name.starts_with(".") || name.starts_with("build"))) {
            it.disable_recursion_pending();
            continue;
        }
        if (it->is_regular_file() && it->file_size() < 4'000'000) files.push_back(it->path());
    }
    std::sort(files.begin(), files.end());
    return files;
}

/// "file: citation" for every citation of docs/DESIGN.md under `root` that names no heading
/// of it.
std::vector<std::string> unresolved_design_citations(const fs::path& root) {
    const Headings design = headings_of(read_all(root / "docs" / "DESIGN.md"));
    std::vector<std::string> bad;
    for (const auto& file : tree_files(root)) {
        const std::string text = read_all(file);
        if (text.find("DESIGN.md") == std::string::npos) continue;
        const std::string where = fs::relative(file, root).string() + ": ";
        for (const auto& name : cited_names(text))
            if (!design.texts.contains(name)) bad.push_back(where + "DESIGN.md, \"" + name + "\"");
        for (const auto& anchor : cited_anchors(text))
            if (!design.anchors.contains(anchor)) bad.push_back(where + "DESIGN.md" + "#" + anchor);
    }
    return bad;
}

/// "file: link" for every markdown link of README.md and docs/*.md whose `#anchor` names no
/// heading of the markdown file it points to (`#anchor` alone: the same file). Links to other
/// files' anchors and to outside addresses are not followed.
std::vector<std::string> unresolved_markdown_anchors(const fs::path& root) {
    std::vector<fs::path> docs{root / "README.md"};
    for (const auto& entry : fs::directory_iterator(root / "docs"))
        if (entry.path().extension() == ".md") docs.push_back(entry.path());
    static const std::regex link(R"(\]\(([^)#\s]*)#([^)\s]+)\))");
    std::vector<std::string> bad;
    for (const auto& doc : docs) {
        const std::string text = read_all(doc);
        for (std::sregex_iterator it(text.begin(), text.end(), link), end; it != end; ++it) {
            const std::string target = (*it)[1].str();
            if (target.find("://") != std::string::npos || (!target.empty() && !target.ends_with(".md"))) continue;
            const fs::path file = target.empty() ? doc : doc.parent_path() / target;
            const std::string where = fs::relative(doc, root).string() + ": ";
            if (!fs::exists(file)) {
                bad.push_back(where + (*it)[0].str() + " (no such file)");
            } else if (!headings_of(read_all(file)).anchors.contains((*it)[2].str())) {
                bad.push_back(where + (*it)[0].str());
            }
        }
    }
    return bad;
}

std::string listed(const std::vector<std::string>& lines) {
    std::string out;
    for (const auto& line : lines) out += "  " + line + "\n";
    return out;
}

TEST(DocCitations, EveryCitationOfTheDesignNamesOneOfItsHeadings) {
    const fs::path root = SOURCE_DIR;
    ASSERT_TRUE(fs::exists(root / "docs" / "DESIGN.md")) << root;
    const auto bad = unresolved_design_citations(root);
    EXPECT_TRUE(bad.empty()) << "citations of docs/DESIGN.md naming no heading of it (rename the heading "
                                "or fix the citation):\n"
                             << listed(bad);
}

TEST(DocCitations, TheDesignsContentsListEverySectionInOrder) {
    const std::string design = read_all(fs::path(SOURCE_DIR) / "docs" / "DESIGN.md");
    EXPECT_EQ(contents_anchors(design), headings_of(design).sections)
        << "docs/DESIGN.md's contents (between <!-- contents --> and <!-- /contents -->) must link every "
           "section heading, in order";
}

TEST(DocCitations, EveryMarkdownAnchorBetweenTheDocsResolves) {
    const fs::path root = SOURCE_DIR;
    const auto bad = unresolved_markdown_anchors(root);
    EXPECT_TRUE(bad.empty()) << "links to a heading that does not exist:\n" << listed(bad);
}

TEST(DocCitations, AnchorsAreGithubs) {
    EXPECT_EQ(github_anchor("Failover (measured)"), "failover-measured");
    EXPECT_EQ(github_anchor("Eviction: noeviction, and no CONFIG"), "eviction-noeviction-and-no-config");
    EXPECT_EQ(github_anchor("The asynchronous client: which thread runs what"),
              "the-asynchronous-client-which-thread-runs-what");
    EXPECT_EQ(github_anchor("Wake-up delays on a cluster"), "wake-up-delays-on-a-cluster");
    EXPECT_EQ(github_anchor("a_b  c.d"), "a_b--cd");
    const Headings h = headings_of("# Top\n## Keys\n```sh\n# not a heading\n```\n### Keys\n## `run` and `hold()`\n");
    EXPECT_EQ(h.anchors, (std::set<std::string>{"top", "keys", "keys-1", "run-and-hold"}));
    EXPECT_EQ(h.texts, (std::set<std::string>{"Top", "Keys", "run and hold()"}));
    EXPECT_EQ(h.sections, (std::vector<std::string>{"keys", "keys-1", "run-and-hold"}));
    EXPECT_EQ(contents_anchors("<!-- contents -->\n- [A](#a)\n  - [B](#b)\n<!-- /contents -->\n[C](#c)\n"),
              (std::vector<std::string>{"a", "b"}));
}

// The checks can fail: a tree whose citations name a missing part, wrapped across comment lines
// or not, and whose links point at missing anchors, is reported line by line. The design's name
// is spelt in two pieces here so that this file cites nothing itself.
TEST(DocCitations, ACitationOfAMissingPartIsReported) {
    const std::string design = std::string("DESIGN") + ".md";
    const fs::path root = fs::path(::testing::TempDir()) / ("doc-citations-" + std::to_string(::getpid()));
    fs::create_directories(root / "docs");
    fs::create_directories(root / "src" / "lock");
    fs::create_directories(root / "build");
    {
        std::ofstream(root / "docs" / design) << "# Design\n## Failure model\n### Clock skew\n```\n## In code\n```\n";
        std::ofstream(root / "docs" / "STORE.md")
            << "See [the failures](" << design << "#failure-model) and [gone](" << design << "#lost-replies),\n"
            << "[here](#store) and [there](#nowhere), [a file](MISSING.md#x), [web](https://example.com/#y).\n# Store\n";
        std::ofstream(root / "README.md")
            << "(" << design << ", \"Failure model\") and (" << design << " \"Lost replies\")\n";
        std::ofstream(root / "src" / "lock" / "a.cpp")
            << "// ok (docs/" << design << ", \"Clock\n// skew\"), wrapped\n"
            << "// bad (docs/" << design << ", \"Clock\n// drift\") and (" << design << ", \"In code\")\n"
            << "-- lua (" << design << ", \"Failure\n-- model\")\n";
        std::ofstream(root / "build" / "copy.md") << design << ", \"Ignored\"\n";
    }
    const auto citations = unresolved_design_citations(root);
    const auto anchors = unresolved_markdown_anchors(root);
    fs::remove_all(root);
    EXPECT_EQ(citations, (std::vector<std::string>{
                             "README.md: " + design + ", \"Lost replies\"",
                             "docs/STORE.md: " + design + "#lost-replies",
                             "src/lock/a.cpp: " + design + ", \"Clock drift\"",
                             "src/lock/a.cpp: " + design + ", \"In code\"",
                         }));
    EXPECT_EQ(anchors, (std::vector<std::string>{
                           "docs/STORE.md: ](" + design + "#lost-replies)",
                           "docs/STORE.md: ](#nowhere)",
                           "docs/STORE.md: ](MISSING.md#x) (no such file)",
                       }));
}

}  // namespace
}  // namespace fencelock
