#!/usr/bin/env python3
"""The table and the plot of bench/hot_sweep.sh (standard library only).

  sweep_report.py table FILE   markdown table of FILE's JSON lines, one row per (contenders, tool)
  sweep_report.py svg FILE     an SVG with three panels against the contender count (log scale):
                               handoffs/s, wait p99 and the Redis connections in use
"""
import json
import math
import sys

TOOLS = ["fencelock-threads", "fencelock-async", "fencelock-processes", "node-redlock"]
COLOURS = {"fencelock-threads": "#1f77b4", "fencelock-async": "#9467bd", "fencelock-processes": "#2ca02c",
           "node-redlock": "#d62728"}


def load(path):
    rows = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                rows.append(json.loads(line))
    return rows


def fmt(value, digits=0):
    if value is None:
        return "–"
    return f"{value:,.{digits}f}"


def table(rows):
    out = ["| contenders | tool | handoffs/s | wait p50 ms | wait p99 ms | failed attempts / success "
           "| fairness (max/min) | Redis connections | Redis commands/s |",
           "|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    key = lambda r: (r.get("clients", 0), TOOLS.index(r["tool"]) if r["tool"] in TOOLS else 99)
    for r in sorted(rows, key=key):
        if r.get("available") is False:
            out.append(f"| {r.get('clients')} | {r['tool']} | not available: {r.get('reason', '')} |||||||")
            continue
        ms = lambda us: None if us is None else us / 1000
        out.append("| {} | {} | {} | {} | {} | {} | {} | {} | {} |".format(
            r.get("clients"), r["tool"], fmt(r.get("handoffs_per_sec")),
            fmt(ms(r.get("wait_p50_us")), 2), fmt(ms(r.get("wait_p99_us")), 2),
            fmt(r.get("failed_attempts_per_success"), 2), fmt(r.get("fairness"), 2),
            fmt(r.get("peak_connections")), fmt(r.get("redis_commands_per_sec"))))
    return "\n".join(out)


def panel(x0, y0, w, h, title, series, log_y):
    """One panel: `series` maps tool -> [(contenders, value)]."""
    parts = [f'<g transform="translate({x0},{y0})">',
             f'<text x="{w / 2}" y="-8" text-anchor="middle" font-size="13">{title}</text>',
             f'<rect width="{w}" height="{h}" fill="none" stroke="#999"/>']
    xs = sorted({x for pts in series.values() for x, _ in pts})
    ys = [y for pts in series.values() for _, y in pts if y is not None and (y > 0 or not log_y)]
    if not xs or not ys:
        return "".join(parts) + "</g>"
    lx = lambda x: math.log2(x)
    x_lo, x_hi = lx(xs[0]), max(lx(xs[-1]), lx(xs[0]) + 1)
    f = (lambda y: math.log10(y)) if log_y else (lambda y: y)
    y_lo, y_hi = (f(min(ys)), f(max(ys))) if log_y else (0.0, max(ys))
    if y_hi <= y_lo:
        y_hi = y_lo + 1
    px = lambda x: (lx(x) - x_lo) / (x_hi - x_lo) * w
    py = lambda y: h - (f(y) - y_lo) / (y_hi - y_lo) * h
    for x in xs:
        parts.append(f'<text x="{px(x):.1f}" y="{h + 14}" text-anchor="middle" font-size="10">{x}</text>')
    for y in (min(ys), max(ys)):
        parts.append(f'<text x="-4" y="{py(y):.1f}" text-anchor="end" font-size="10">{y:,.0f}</text>')
    for tool, pts in series.items():
        pts = [(x, y) for x, y in pts if y is not None and (y > 0 or not log_y)]
        if not pts:
            continue
        line = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in pts)
        parts.append(f'<polyline points="{line}" fill="none" stroke="{COLOURS.get(tool, "#555")}" stroke-width="2"/>')
        for x, y in pts:
            parts.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="{COLOURS.get(tool, "#555")}"/>')
    return "".join(parts) + "</g>"


def svg(rows):
    rows = [r for r in rows if r.get("available") is not False]
    def series(field, scale=1.0):
        out = {}
        for tool in TOOLS:
            pts = sorted((r["clients"], None if r.get(field) is None else r[field] * scale)
                         for r in rows if r["tool"] == tool)
            if pts:
                out[tool] = pts
        return out
    w, h, gap = 260, 180, 70
    width = 3 * w + 4 * gap
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{h + 110}" '
             'font-family="sans-serif">', f'<rect width="{width}" height="{h + 110}" fill="white"/>']
    parts.append(panel(gap, 30, w, h, "handoffs/s", series("handoffs_per_sec"), False))
    parts.append(panel(2 * gap + w, 30, w, h, "wait p99, ms (log)", series("wait_p99_us", 0.001), True))
    parts.append(panel(3 * gap + 2 * w, 30, w, h, "Redis connections in use", series("peak_connections"), False))
    parts.append(f'<text x="{width / 2}" y="{h + 68}" text-anchor="middle" font-size="11">contenders on one '
                 'resource (log scale)</text>')
    for i, tool in enumerate(TOOLS):
        x = gap + i * 220
        parts.append(f'<rect x="{x}" y="{h + 82}" width="12" height="12" fill="{COLOURS[tool]}"/>'
                     f'<text x="{x + 18}" y="{h + 93}" font-size="12">{tool}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def main(argv):
    if len(argv) != 3 or argv[1] not in ("table", "svg"):
        sys.exit(__doc__)
    rows = load(argv[2])
    print(table(rows) if argv[1] == "table" else svg(rows))


if __name__ == "__main__":
    main(sys.argv)
