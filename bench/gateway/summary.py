"""bench/gateway/run.sh's summary: reads the raw results in the work directory and prints one
markdown table with ratios to nginx and a verdict per issue-4 target.

    python3 bench/gateway/summary.py WORKDIR
"""
import json
import math
import os
import re
import sys

ROUTES = ["direct", "nginx", "tokenradar", "portkey"]
MODES = [("nonstream", "non-stream"), ("stream", "stream")]
ADDED_RATIO_MAX = 1.5   # TokenRadar's added latency / nginx's
RATE_RATIO_MIN = 0.80   # TokenRadar's req/s / nginx's
TTFT_ADDED_MAX_MS = 0.1
RELAY_P99_MAX_S = 100e-6
RSS_MAX_MB = 64
TICK_S = 0.01  # /proc/PID/stat counts CPU in 1/100 s


def key_values(text):
    return {k: v for k, v in re.findall(r"(\w+)=(\S+)", text)}


def read(workdir, name):
    path = os.path.join(workdir, name)
    return open(path).read() if os.path.exists(path) else None


def load_wrk(workdir, route, mode, c):
    text = read(workdir, f"wrk-{route}-{mode}-c{c}.txt") or ""
    kv = key_values(" ".join(line for line in text.splitlines() if line.startswith(("RESULT", "CPU"))))
    if "requests" not in kv:
        return None
    requests = int(kv["requests"])
    duration_s = int(kv["duration_us"]) / 1e6
    return {
        "p50_ms": int(kv["p50_us"]) / 1000,
        "p99_ms": int(kv["p99_us"]) / 1000,
        "requests": requests,
        "rps": requests / duration_s,
        "failed": int(kv["errors"]) + int(kv["non2xx"]),
        "cpu_us_per_req": int(kv.get("ticks", 0)) * TICK_S * 1e6 / requests if requests else math.nan,
    }


def relay_buckets(text):
    """Cumulative counts of tokenradar_relay_delay_seconds, keyed by the bucket bound."""
    buckets = {}
    for le, count in re.findall(r'^tokenradar_relay_delay_seconds_bucket\{le="([^"]+)"\} (\S+)', text or "", re.M):
        buckets[math.inf if le == "+Inf" else float(le)] = float(count)
    return buckets


def relay_p99(workdir, mode, c):
    """The upper bound of the bucket holding the 99th percentile chunk during one run."""
    before = relay_buckets(read(workdir, f"metrics-before-{mode}-c{c}.txt"))
    after = relay_buckets(read(workdir, f"metrics-after-{mode}-c{c}.txt"))
    if not after:
        return None, 0
    diff = sorted((le, after[le] - before.get(le, 0.0)) for le in after)
    total = diff[-1][1]
    if total <= 0:
        return None, 0
    return next(le for le, cum in diff if cum >= 0.99 * total), int(total)


def ms(x):
    return f"{x:.3f} ms"


def added(x):
    return f"{x:+.3f} ms"


def verdict(ok):
    return "met" if ok else "**NOT MET**"


def main():
    workdir = sys.argv[1]
    run = key_values(read(workdir, "run.txt") or "")
    wrk = {(r, m, c): load_wrk(workdir, r, m, c) for r in ROUTES for m, _ in MODES for c in (1, 64)}
    rows = []
    failures = []
    for (r, m, c), w in wrk.items():
        if w is None:
            failures.append(f"{r} {m} c={c}: no result")
        elif w["failed"]:
            failures.append(f"{r} {m} c={c}: {w['failed']} failed requests")

    # Added latency: the route's wrk latency minus direct's, same request kind and concurrency.
    for mode, label in MODES:
        for c in (1, 64):
            d = wrk[("direct", mode, c)]
            for q in ("p50", "p99"):
                key = f"{q}_ms"
                if d is None or any(wrk[(r, mode, c)] is None for r in ROUTES):
                    continue
                add = {r: wrk[(r, mode, c)][key] - d[key] for r in ROUTES[1:]}
                ngx, tr = add["nginx"], add["tokenradar"]
                if ngx > 0:
                    ratio, ok = f"{tr / ngx:.2f}x", tr <= ADDED_RATIO_MAX * ngx
                else:
                    ratio, ok = ("n/a (nginx added nothing)", tr <= 0)
                rows.append([f"{label} c={c}: latency {q}, added", ms(d[key]), added(ngx), added(tr),
                             added(add["portkey"]), ratio, f"<= {ADDED_RATIO_MAX}x", verdict(ok)])

    # Request rate at concurrency 64, and the CPU each route's proxy spent per request.
    for mode, label in MODES:
        w = {r: wrk[(r, mode, 64)] for r in ROUTES}
        if any(v is None for v in w.values()):
            continue
        direct = w["direct"]["rps"]
        cells = [f"{w[r]['rps']:,.0f} ({100 * w[r]['rps'] / direct:.0f}%)" for r in ROUTES[1:]]
        ratio = w["tokenradar"]["rps"] / w["nginx"]["rps"]
        rows.append([f"{label} c=64: requests/s (% of direct)", f"{direct:,.0f}", *cells, f"{100 * ratio:.0f}%",
                     f">= {100 * RATE_RATIO_MIN:.0f}%", verdict(ratio >= RATE_RATIO_MIN)])
        cpu = [f"{w[r]['cpu_us_per_req']:.0f} us" for r in ROUTES]
        rows.append([f"{label} c=64: CPU per request (proxy; direct: the sim)", *cpu,
                     f"{w['tokenradar']['cpu_us_per_req'] / w['nginx']['cpu_us_per_req']:.2f}x", "", ""])

    # Streaming TTFT: direct, nginx and TokenRadar from one interleaved bench run; Portkey
    # from a run of its own, against the direct baseline measured in that run.
    def ttft_p50(name, routes):
        text = read(workdir, name)
        if not text:
            return None
        targets = {t["name"]: t for t in json.loads(text)["targets"]}
        for r in routes:
            if r in targets and targets[r]["errors"]:
                failures.append(f"TTFT bench {r}: {targets[r]['errors']} errors")
        p50 = {r: targets[r]["ttft_ms"]["p50"] for r in routes if r in targets and targets[r]["ttft_ms"]["count"]}
        if len(p50) != len(routes):
            failures.append(f"TTFT bench ({name}): a route has no successful stream")
            return None
        return p50

    p50 = ttft_p50("ttft.json", ["direct", "nginx", "tokenradar"])
    if p50:
        portkey = ttft_p50("ttft-portkey.json", ["direct", "portkey"])
        portkey_added = added(portkey["portkey"] - portkey["direct"]) if portkey else ""
        tr_added = p50["tokenradar"] - p50["direct"]
        rows.append(["stream c=1: TTFT p50 (tokenradar bench), added", ms(p50["direct"]),
                     added(p50["nginx"] - p50["direct"]), added(tr_added), portkey_added,
                     "", f"TokenRadar < {TTFT_ADDED_MAX_MS} ms", verdict(tr_added < TTFT_ADDED_MAX_MS)])

    # Per-chunk relay delay from TokenRadar's own histogram, per streaming run.
    relay = []
    for c in (1, 64):
        bound, chunks = relay_p99(workdir, "stream", c)
        w = wrk[("tokenradar", "stream", c)]
        if bound is not None and w is not None:
            relay.append((c, bound, chunks / w["requests"] if w["requests"] else math.nan))
    if relay:
        text = " / ".join((f"c={c}: <= {b * 1e6:g} us" if b != math.inf else f"c={c}: > 100 ms") +
                          f" ({writes:.0f} writes per stream)" for c, b, writes in relay)
        ok = all(b <= RELAY_P99_MAX_S for _, b, _ in relay)
        rows.append(["stream: relay delay p99 per chunk (TokenRadar /metrics bucket)", "", "", text, "", "",
                     f"< {RELAY_P99_MAX_S * 1e6:.0f} us", verdict(ok)])

    mem = key_values(read(workdir, "memory.txt") or "")
    if mem:
        rss_mb = int(mem["rss_max_kb"]) / 1024
        rows.append([f"memory: RSS with {int(mem['streams']):,} open streams", "", "",
                     f"{rss_mb:.1f} MB (idle {int(mem['rss_idle_kb']) / 1024:.1f}, HWM {int(mem['hwm_kb']) / 1024:.1f}; "
                     f"{mem['active_at_max']} in flight)", "", "", f"< {RSS_MAX_MB} MB", verdict(rss_mb < RSS_MAX_MB)])

    header = ["measure", "direct", "nginx", "TokenRadar", "Portkey", "TokenRadar vs nginx", "target", ""]
    print()
    print("| " + " | ".join(header) + " |")
    print("| " + " | ".join(["---"] + ["---:"] * 5 + ["---", "---"]) + " |")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    print()
    pinned = "clients on CPU 0, upstream and proxy on CPU 1" if run.get("pinned") == "yes" else "not pinned"
    print(f"{run.get('seconds', '?')} s per scenario; streams of {run.get('stream_tokens', '?')} tokens (one SSE "
          f"event each); {pinned}; load average {run.get('loadavg_start', '?')} at the start, {run.get('loadavg_end', '?')} "
          f"at the end. TokenRadar: {(read(workdir, 'store.txt') or 'store=?').strip()}.")
    for f in failures:
        print(f"- failures: {f}")


if __name__ == "__main__":
    main()
