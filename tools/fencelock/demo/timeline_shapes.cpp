#include "demo/timeline_shapes.hpp"

#include "demo/timeline.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <utility>

namespace fencelock::demo::detail {
namespace {

constexpr const char* no_write_colour = "#c7c7c7";
constexpr const char* lease_lost_colour = "#f28e2b";

std::string shape(const Mark& m) {
    switch (m.outcome) {
        case Outcome::rejected:
            return fmt::format(
                "<g class='mark-rejected'><title>{}</title><rect x='{:.1f}' y='{}' width='12' height='12' "
                "fill='{}'/><path d='M{:.1f} {} l8 8 m0 -8 l-8 8' stroke='white' stroke-width='2'/></g>\n",
                m.tooltip, m.x - 6, m.y + 13, rejected_colour, m.x - 4, m.y + 15);
        case Outcome::culprit:
            return fmt::format(
                "<g class='mark-culprit'><title>{}</title><circle cx='{:.1f}' cy='{}' r='7' fill='{}'/>"
                "<path d='M{:.1f} {} v6' stroke='white' stroke-width='2.5'/></g>\n",
                m.tooltip, m.x, m.y + 19, culprit_colour, m.x, m.y + 16);
        default:
            return fmt::format(
                "<g class='mark-lost'><title>{}</title><path d='M{:.1f} {} l8 8 l-8 8 l-8 -8 z' fill='{}' "
                "stroke='black' stroke-width='1'/></g>\n",
                m.tooltip, m.x, m.y + 11, lost_colour);
    }
}

// A cluster's label: one kind alone is "LOST" or "3 LOST"; kinds together are counted each,
// "1 LOST 2 REJECTED".
std::string cluster_label(std::size_t lost, std::size_t rejected, std::size_t culprits) {
    const std::pair<std::size_t, const char*> parts[] = {{lost, "LOST"}, {rejected, "REJECTED"}, {culprits, "CULPRIT"}};
    const auto kinds = std::count_if(std::begin(parts), std::end(parts), [](const auto& p) { return p.first > 0; });
    std::string text;
    for (const auto& [n, word] : parts) {
        if (n == 0) continue;
        if (!text.empty()) text += ' ';
        text += kinds == 1 && n == 1 ? std::string(word) : fmt::format("{} {}", n, word);
    }
    return text;
}

}  // namespace

std::string escape(const std::string& s) {
    std::string out;
    for (char c : s) {
        switch (c) {
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '&': out += "&amp;"; break;
            case '"': out += "&quot;"; break;
            case '\'': out += "&#39;"; break;
            default: out += c;
        }
    }
    return out;
}

double text_width(const std::string& text, int font_size, bool bold) {
    const auto chars = std::count_if(text.begin(), text.end(), [](char c) { return (c & 0xC0) != 0x80; });
    return static_cast<double>(chars) * font_size * (bold ? 0.72 : 0.62);
}

std::string label(const Label& l) {
    const double w = text_width(l.text, l.font_size, l.bold);
    const double before = l.anchor == Anchor::middle ? w / 2 : l.anchor == Anchor::end ? w : 0;  // left of x
    const double x =
        std::clamp(l.x, edge_gap + before, std::max(edge_gap + before, drawing_width - edge_gap - (w - before)));
    return fmt::format("<text x='{:.1f}' y='{}' font-size='{}'{}{}{}>{}{}</text>\n", x, l.y, l.font_size,
                       l.anchor == Anchor::start    ? ""
                       : l.anchor == Anchor::middle ? " text-anchor='middle'"
                                                    : " text-anchor='end'",
                       l.bold ? " font-weight='bold'" : "", l.fill.empty() ? "" : fmt::format(" fill='{}'", l.fill),
                       escape(l.text), l.tooltip.empty() ? "" : "<title>" + l.tooltip + "</title>");
}

std::string bar(double x0, double x1, int y, Outcome o, const std::string& tooltip) {
    const double w = std::max(x1 - x0, 1.5);
    switch (o) {
        case Outcome::rejected:  // hollow: nothing reached the record
            return fmt::format(
                "<rect x='{:.1f}' y='{}' width='{:.1f}' height='10' fill='white' stroke='{}' "
                "stroke-width='1.5'><title>{}</title></rect>\n",
                x0, y + 14, w, rejected_colour, tooltip);
        case Outcome::lost:
            return fmt::format(
                "<rect x='{:.1f}' y='{}' width='{:.1f}' height='10' fill='{}' stroke='black' "
                "stroke-width='1'><title>{}</title></rect>\n",
                x0, y + 14, w, lost_colour, tooltip);
        case Outcome::culprit:  // accepted, outlined: the store took it, and it did the damage
            return fmt::format(
                "<rect x='{:.1f}' y='{}' width='{:.1f}' height='10' fill='{}' stroke='{}' "
                "stroke-width='2'><title>{}</title></rect>\n",
                x0, y + 14, w, accepted_colour, culprit_colour, tooltip);
        case Outcome::accepted:
        case Outcome::no_write:
            return fmt::format(
                "<rect x='{:.1f}' y='{}' width='{:.1f}' height='10' fill='{}'><title>{}</title></rect>\n", x0, y + 14,
                w, o == Outcome::accepted ? accepted_colour : no_write_colour, tooltip);
    }
    return {};
}

std::string marks_with_labels(std::vector<Mark> marks) {
    constexpr double label_gap = 48;
    std::sort(marks.begin(), marks.end(),
              [](const Mark& a, const Mark& b) { return std::pair(a.y, a.x) < std::pair(b.y, b.x); });
    std::string svg;
    for (std::size_t first = 0, next = 0; first < marks.size(); first = next) {
        std::size_t lost = 0, rejected = 0, culprits = 0;
        for (next = first; next < marks.size() && marks[next].y == marks[first].y &&
                           (next == first || marks[next].x - marks[next - 1].x < label_gap);
             ++next) {
            svg += shape(marks[next]);
            ++(marks[next].outcome == Outcome::lost      ? lost
               : marks[next].outcome == Outcome::culprit ? culprits
                                                         : rejected);
        }
        svg += label({.x = (marks[first].x + marks[next - 1].x) / 2,
                      .y = marks[first].y + 10,
                      .text = cluster_label(lost, rejected, culprits),
                      .anchor = Anchor::middle,
                      .font_size = 10,
                      .bold = true,
                      .fill = lost > 0       ? lost_colour
                              : culprits > 0 ? culprit_colour
                                             : rejected_colour});
    }
    return svg;
}

std::string lease_lost_mark(double x, int y, const std::string& tooltip) {
    return fmt::format("<path d='M{:.1f} {} l4 7 l-8 0 z' fill='{}'><title>{}</title></path>\n", x, y + 27,
                       lease_lost_colour, tooltip);
}

std::string legend() {
    struct Entry {
        Outcome outcome;
        const char* text;
        bool mark;  ///< the plot's mark beside the bar
    };
    const Entry entries[] = {{Outcome::accepted, "write accepted", false},
                             {Outcome::rejected, "stale write rejected (fencing)", true},
                             {Outcome::lost, "lost update: acknowledged, then overwritten", true},
                             {Outcome::culprit, "culprit: the stale write behind a lost update", true},
                             {Outcome::no_write, "no write (lease lost first)", false}};
    constexpr int line_height = 24, swatch = 36, spacing = 22, font_size = 12;
    std::string items;
    int x = edge_gap, y = 0;
    auto next_entry = [&](double entry_width) {
        if (x > edge_gap && x + entry_width > drawing_width - edge_gap) x = edge_gap, y += line_height;
    };
    for (const auto& e : entries) {
        next_entry(swatch + text_width(e.text, font_size) + spacing);
        items += bar(x, x + 30, y, e.outcome, e.text);
        if (e.mark) items += marks_with_labels({{e.outcome, x + 24.0, y, e.text}});
        items += label({.x = x + swatch + 4.0, .y = y + 26, .text = e.text, .font_size = font_size});
        x += static_cast<int>(swatch + 4 + text_width(e.text, font_size) + spacing);
    }
    next_entry(14 + text_width("lease lost", font_size));
    items += lease_lost_mark(x + 4, y - 8, "lease lost");
    items += label({.x = x + 14.0, .y = y + 26, .text = "lease lost", .font_size = font_size});
    const int height = y + line_height + 12;
    return fmt::format(
        "<svg xmlns='http://www.w3.org/2000/svg' width='{0}' height='{1}' viewBox='0 0 {0} {1}' "
        "font-family='sans-serif' font-size='{2}'>\n{3}</svg>\n",
        drawing_width, height, font_size, items);
}

}  // namespace fencelock::demo::detail
