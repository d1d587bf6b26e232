#!/usr/bin/env python3
"""JSON lines and the markdown table of bench/compare.sh (standard library only).

  report.py line [--base FILE] key=value ...   one JSON object: FILE's last JSON object line (if
                                               any) with the fields added; "tool" goes first.
                                               Values are parsed as JSON when they parse
                                               (numbers, true, null), else kept as strings.
  report.py table FILE                         the tables and the issue-8 ratios from FILE's
                                               JSON lines
"""
import json
import sys


def parse_value(text):
    try:
        return json.loads(text)
    except ValueError:
        return text


def last_json_object(path):
    """The last line of the file that is a JSON object, or None (the file may hold log lines)."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def cmd_line(args):
    base = {}
    if args[:1] == ["--base"]:
        base = last_json_object(args[1]) or {}
        args = args[2:]
    extra = {}
    for arg in args:
        key, sep, value = arg.partition("=")
        if not sep:
            sys.exit(f"report.py line: expected key=value, got {arg!r}")
        extra[key] = parse_value(value)
    merged = {"tool": extra.pop("tool", base.pop("tool", None))}
    merged.update(base)
    merged.update(extra)
    print(json.dumps(merged, separators=(",", ":")))


def fmt(value, digits=0):
    if value is None:
        return "–"
    if isinstance(value, float) or (digits and isinstance(value, int) and not isinstance(value, bool)):
        return f"{value:,.{digits}f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def label(row):
    tool = row["tool"]
    if tool == "redis-benchmark":
        return f"redis-benchmark ceiling (-P {row.get('pipeline', 1)})"
    if tool == "fencelock":
        # keep: hold() (a kept lease, which takes a release's direct grant), not acquire().
        modes = [m for m, on in (("async API, one thread", row.get("api") == "async"),
                                 ("fair mode", row.get("fair")), ("hold()", row.get("keep"))) if on]
        return f"fencelock ({', '.join(modes)})" if modes else tool
    if tool == "sesame-redlock":
        return "@sesamecare-oss/redlock"
    return tool


def unavailable(row):
    return row.get("available") is False


def distinct_table(rows, out):
    out.append("### Distinct resources: acquire + release cycles")
    out.append("")
    out.append("| tool | clients | connections | cycles/s | p50 µs | p99 µs | commands sent per cycle "
               "| Redis calls per cycle | errors |")
    out.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        if r.get("scenario") != "distinct":
            continue
        if unavailable(r):
            out.append(f"| {label(r)} | {fmt(r.get('clients'))} | | unavailable: {r.get('reason', '')} | | | | | |")
            continue
        out.append(
            f"| {label(r)} | {fmt(r.get('clients'))} | {fmt(r.get('connections'))} "
            f"| {fmt(r.get('cycles_per_sec'))} | {fmt(r.get('p50_us'))} | {fmt(r.get('p99_us'))} "
            f"| {fmt(r.get('commands_sent_per_cycle'), 2)} | {fmt(r.get('redis_calls_per_cycle'), 2)} "
            f"| {fmt(r.get('errors'))} |"
        )
    out.append("")


def hot_table(rows, out):
    hot = [r for r in rows if r.get("scenario") == "hot"]
    if not hot:
        return
    clients = next((r.get("clients") for r in hot if r.get("clients")), "?")
    out.append(f"### One hot resource, {clients} contenders")
    out.append("")
    out.append("| tool | handoffs/s | wait p50 µs | wait p99 µs | failed attempts per success "
               "| commands sent per acquisition | Redis calls per acquisition | fairness (max/min) | errors |")
    out.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in hot:
        if unavailable(r):
            out.append(f"| {label(r)} | unavailable: {r.get('reason', '')} | | | | | | | |")
            continue
        fairness = r.get("fairness")
        fair = fmt(fairness, 2) if fairness is not None else f"∞ (min {fmt(r.get('acquisitions_min'))})"
        out.append(
            f"| {label(r)} | {fmt(r.get('handoffs_per_sec'))} | {fmt(r.get('wait_p50_us'))} "
            f"| {fmt(r.get('wait_p99_us'))} | {fmt(r.get('failed_attempts_per_success'), 2)} "
            f"| {fmt(r.get('commands_sent_per_acquisition'), 2)} | {fmt(r.get('redis_calls_per_acquisition'), 2)} "
            f"| {fair} | {fmt(r.get('errors'))} |"
        )
    out.append("")


def find(rows, tool, scenario, clients=None, pipeline=None, api=None):
    for r in rows:
        if r.get("tool") != tool or r.get("scenario") != scenario or unavailable(r) or r.get("fair") or r.get("keep"):
            continue
        if (r.get("api") == "async") != (api == "async"):
            continue
        if clients is not None and r.get("clients") != clients:
            continue
        if pipeline is not None and r.get("pipeline", 1) != pipeline:
            continue
        return r
    return None


def ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def targets_table(rows, clients, out):
    """Issue 16's targets, every ratio from this one run."""
    peers = ("node-redlock", "sesame-redlock", "redis-semaphore")
    # The faster of fencelock's threads and its async API (one thread driving every locker).
    fl16 = max((r for r in (find(rows, "fencelock", "distinct", clients),
                            find(rows, "fencelock", "distinct", clients, api="async")) if r),
               key=lambda r: r["cycles_per_sec"], default=None)
    peer16 = [r for r in (find(rows, p, "distinct", clients) for p in peers) if r]
    best = max(peer16, key=lambda r: r["cycles_per_sec"], default=None)
    pipelined = next((r for r in rows if r.get("tool") == "redis-benchmark" and r.get("clients") == clients
                      and r.get("pipeline", 1) > 1 and not unavailable(r)), None)
    # The same for the hot resource; fair mode is compared with the default mode on the same API.
    fl_hot = max((r for r in (find(rows, "fencelock", "hot"), find(rows, "fencelock", "hot", api="async")) if r),
                 key=lambda r: r["handoffs_per_sec"], default=None)
    fl_fair = next((r for r in rows if r.get("tool") == "fencelock" and r.get("scenario") == "hot"
                    and r.get("fair") and not r.get("keep") and not unavailable(r)
                    and r.get("api") == (fl_hot or {}).get("api")), None)
    rl_hot = find(rows, "node-redlock", "hot")
    peer_hot = [r for r in (find(rows, p, "hot") for p in peers) if r]
    best_hot = max(peer_hot, key=lambda r: r["handoffs_per_sec"], default=None)
    fl1 = find(rows, "fencelock", "distinct", 1)
    rl1 = find(rows, "node-redlock", "distinct", 1)
    rb1 = find(rows, "redis-benchmark", "distinct", 1, pipeline=1)

    def get(row, key):
        return row.get(key) if row else None

    hot_name = label(fl_hot) if fl_hot else "fencelock"

    def at_least(bound):
        return f"≥ {bound}×", lambda v: v >= bound

    def at_most(bound, unit="×"):
        return f"≤ {bound}{unit}", lambda v: v <= bound

    lines = [
        (f"{clients} distinct lockers: {label(fl16) if fl16 else 'fencelock'} / best npm peer"
         + (f" ({label(best)})" if best else ""),
         ratio(get(fl16, "cycles_per_sec"), get(best, "cycles_per_sec")), *at_least(1.5), "×"),
        (f"{clients} distinct lockers: {label(fl16) if fl16 else 'fencelock'} / redis-benchmark ceiling (-P {get(pipelined, 'pipeline')})",
         ratio(get(fl16, "cycles_per_sec"), get(pipelined, "cycles_per_sec")), *at_least(0.7), "×"),
        (f"hot resource handoffs/s: {hot_name} / node-redlock",
         ratio(get(fl_hot, "handoffs_per_sec"), get(rl_hot, "handoffs_per_sec")), *at_least(1.5), "×"),
        (f"hot resource handoffs/s: {hot_name} / best npm peer" + (f" ({label(best_hot)})" if best_hot else ""),
         ratio(get(fl_hot, "handoffs_per_sec"), get(best_hot, "handoffs_per_sec")), *at_least(1), "×"),
        (f"hot resource fairness (max/min acquisitions): {hot_name}", get(fl_hot, "fairness"), *at_most(1.2, ""), ""),
        (f"hot resource p99 wait: {hot_name} / node-redlock",
         ratio(get(fl_hot, "wait_p99_us"), get(rl_hot, "wait_p99_us")), *at_most(0.1), "×"),
        (f"hot resource failed attempts per success: {hot_name}",
         get(fl_hot, "failed_attempts_per_success"), *at_most(0.1, ""), ""),
        (f"hot resource handoffs/s: fair mode / default mode ({hot_name})",
         ratio(get(fl_fair, "handoffs_per_sec"), get(fl_hot, "handoffs_per_sec")), *at_least(0.9), "×"),
        ("1 client p50: fencelock / node-redlock", ratio(get(fl1, "p50_us"), get(rl1, "p50_us")), *at_most(1.0), "×"),
        ("1 client p50: fencelock / redis-benchmark acquire + release p50 (-P 1, 1 client)",
         ratio(get(fl1, "p50_us"), get(rb1, "p50_us")), *at_most(1.1), "×"),
    ]
    out.append("### Issue 16 targets (ratios from this run)")
    out.append("")
    out.append("| measure | value | target | met |")
    out.append("|---|---:|---|---|")
    for name, value, target, ok, unit in lines:
        if value is None:
            out.append(f"| {name} | – | {target} | n/a (not measured) |")
        else:
            out.append(f"| {name} | {value:.2f}{unit} | {target} | {'yes' if ok(value) else 'no'} |")
    out.append("")


def notes(rows, clients, out):
    out.append("Notes:")
    out.append("")
    out.append("- Commands sent: the commands the tool's client issued (counted in the npm drivers; "
               "`–`: the tool does not report it). Redis calls: Redis's own count (INFO "
               "total_commands_processed) over the run, calls made inside Lua scripts included, measured "
               "the same way for every tool; the `commands_per_acquisition` key in the JSON (fencelock's "
               "and the peers') is that same server count, taken by the tool itself.")
    peer = next((r for r in rows if r.get("scenario") == "hot" and r.get("retry_ms") is not None), None)
    if peer:
        retry = peer["retry_ms"]
        out.append(
            f"- npm peers: one ioredis connection per process shared by all its loops, 10 s lease, no "
            f"automatic extension. Hot resource: node-redlock and @sesamecare-oss/redlock retry every "
            f"{retry} ms ± {retry // 2} ms with retryCount -1 (until acquired); redis-semaphore's Mutex "
            f"retries every {retry} ms with unlimited attempts and a one-hour acquireTimeout.")
    ceiling = find(rows, "redis-benchmark", "distinct", clients, pipeline=1)
    if ceiling:
        out.append(
            f"- Ceiling: redis-benchmark ran the project's acquire.lua and release.lua by EVALSHA from "
            f"{ceiling.get('clients')} connections without pipelining: acquire "
            f"{fmt(ceiling.get('acquire_per_sec'))}/s ({fmt(ceiling.get('acquire_grant_ratio'), 3)} of them "
            f"granted), release {fmt(ceiling.get('release_per_sec'))}/s "
            f"({fmt(ceiling.get('release_hit_ratio'), 3)} of them deleted a lock). Redis runs scripts on one "
            f"thread, so one cycle costs the time of one acquire plus one release: "
            f"cycles/s = 1 / (1/acquire_per_sec + 1/release_per_sec) = {fmt(ceiling.get('cycles_per_sec'))}. "
            f"Releases of random keys mostly find no lock (a cheaper path than a real release), so this "
            f"is an upper bound for a client that sends one command per round trip; each cycle is two "
            f"round trips, and the p50/p99 shown are the sums of the acquire and release percentiles. "
            f"Without pipelining Redis pays a read and a write system call for every command, so a "
            f"client that pipelines (several callers' commands in one write) can pass this line; the "
            f"pipelined line (-P N: N commands per write on each connection) is the ceiling for such "
            f"a client, set by Redis's single thread running the scripts.")
    out.append("")


def cmd_table(args):
    with open(args[0], encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip().startswith("{")]
    clients = max((r.get("clients", 0) for r in rows if r.get("scenario") == "distinct"), default=16)
    out = []
    distinct_table(rows, out)
    hot_table(rows, out)
    targets_table(rows, clients, out)
    notes(rows, clients, out)
    print("\n".join(out))


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in ("line", "table"):
        sys.exit(__doc__)
    if sys.argv[1] == "line":
        cmd_line(sys.argv[2:])
    else:
        cmd_table(sys.argv[2:])


if __name__ == "__main__":
    main()
