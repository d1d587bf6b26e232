#pragma once
// The shapes and labels the demo timeline is drawn with (timeline.cpp lays them out): SVG text
// that stays inside the drawing, one bar shape per write outcome, the marks on writes that need
// a second look with their shared labels, and the legend, which draws the same shapes so the
// two always match. Pure: each call returns SVG text.
#include <string>
#include <vector>

namespace fencelock::demo::detail {

/// The width of every drawing (legend and runs), px.
inline constexpr int drawing_width = 1100;
/// The gap every label keeps from the drawing's edges, px.
inline constexpr int edge_gap = 4;

/// `s` with the five characters that are special in XML escaped.
std::string escape(const std::string& s);

/// A text's width in px, estimated from its characters (UTF-8 code points): sans-serif glyphs
/// average under 0.62 em, bold ones under 0.72 em. Generous, so a label placed by it fits.
double text_width(const std::string& text, int font_size, bool bold = false);

enum class Anchor { start, middle, end };  ///< which point of the text x names

/// One line of text. It is moved sideways as far as needed for its estimated extent to stay
/// inside the drawing, so no label is clipped at either edge.
struct Label {
    double x = 0;
    int y = 0;
    std::string text{};  ///< plain text, escaped when written
    Anchor anchor = Anchor::start;
    int font_size = 11;
    bool bold = false;
    std::string fill{};     ///< empty: the default, black
    std::string tooltip{};  ///< escaped already; empty: none
};

/// The SVG <text> of `l`, kept inside the drawing.
std::string label(const Label& l);

/// What became of one operation's write, which decides its bar's shape and colour.
enum class Outcome { accepted, rejected, lost, culprit, no_write };

/// One operation's bar from x0 to x1 (at least 1.5 px wide) in the row whose top is `y`, with
/// `tooltip` (escaped already) on hover: filled green when accepted, hollow red when rejected,
/// magenta when lost, green outlined black for a culprit, grey with no write.
std::string bar(double x0, double x1, int y, Outcome o, const std::string& tooltip);

/// Where a write's outcome needs a second look: the moment a stale write hit the store (a red
/// square with a white cross), a lost update was acknowledged (a magenta diamond), or the stale
/// write behind a lost update was accepted (a black circle with a white bar): the write that
/// overwrote it, or the lost update itself when a newer holder had read before it landed.
struct Mark {
    Outcome outcome;  ///< rejected, lost or culprit
    double x;
    int y;  ///< the row's top
    std::string tooltip;
};

/// The marks' shapes. Marks of one row closer than a label's width share one label above them
/// ("LOST", "3 LOST", "1 LOST 2 REJECTED"), in the lost colour when the cluster lost anything,
/// else the culprit's when it holds one.
std::string marks_with_labels(std::vector<Mark> marks);

/// An orange triangle under the bar of the row whose top is `y`, pointing at the moment `x`
/// the keeper saw the lease go.
std::string lease_lost_mark(double x, int y, const std::string& tooltip);

/// The legend, an SVG drawing of its own: one entry per shape, wrapped onto as many lines as
/// the drawing's width needs.
std::string legend();

}  // namespace fencelock::demo::detail
