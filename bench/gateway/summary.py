"""bench/gateway/run.sh's summary: reads the raw results in the work directory and prints one
markdown table with ratios to nginx and a verdict per issue-4 target.

    python3 bench/gateway/summary.py WORKDIR
"""
import json
import math
import os
import re
import sys

ROUTES = ["direct", "nginx", "tokenradar", "tokenradar-nostore", "portkey"]
# Measured at c=64 only and not judged: the gateway with its store off, so the table shows
# what writing every record costs. A work directory without it still gets its table.
ACCOUNTING_ROUTES = {"tokenradar-nostore"}
JUDGED_PROXIES = [r for r in ROUTES[1:] if r not in ACCOUNTING_ROUTES]
MODES = [("nonstream", "non-stream"), ("stream", "stream")]
# Direct, nginx and TokenRadar in front of the 20 ms upstream (llm.toml), 64 requests in flight.
LLM_ROUTES = ("direct-llm", "nginx-llm", "tokenradar-llm")
ADDED_RATIO_MAX = 1.5   # TokenRadar's added latency / nginx's
RATE_RATIO_MIN = 0.80   # TokenRadar's req/s / nginx's
TTFT_ADDED_MAX_MS = 0.1
RELAY_P99_MAX_S = 100e-6
RSS_MAX_MB = 64
CLIENT_LAG_MAX_MS = 10  # bench's own warning threshold for an open loop
TICK_S = 0.01  # /proc/PID/stat counts CPU in 1/100 s


def key_values(text):
    return {k: v for k, v in re.findall(r"(\w+)=(\S+)", text)}


def read(workdir, name):
    path = os.path.join(workdir, name)
    return open(path).read() if os.path.exists(path) else None


def load_wrk(workdir, route, mode, c):
    """The route's median round of its wrk runs (wrk-ROUTE-MODE-cC.rN.txt), chosen by
    requests/s (the lower one of the middle two for an even count): its latency and CPU
    come from that same round. all_requests, all_failed and rounds count every round."""
    rounds = sorted(name for name in os.listdir(workdir)
                    if re.fullmatch(rf"wrk-{route}-{mode}-c{c}\.r\d+\.txt", name))
    runs = [run for run in (load_wrk_run(read(workdir, name)) for name in rounds) if run]
    if not runs:
        return None
    runs.sort(key=lambda run: run["rps"])
    median = dict(runs[(len(runs) - 1) // 2])
    median["all_requests"] = sum(run["requests"] for run in runs)  # what /metrics saw
    median["all_failed"] = sum(run["failed"] for run in runs)
    median["rounds"] = len(runs)
    return median


def load_wrk_run(text):
    kv = key_values(" ".join(line for line in (text or "").splitlines() if line.startswith(("RESULT", "CPU"))))
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


def read_bench(workdir, name):
    """One `tokenradar bench --format json` output, parsed, or None."""
    text = read(workdir, name)
    return json.loads(text) if text else None


def load_bench(workdir, name, routes, failures):
    """One `tokenradar bench --format json` run: its targets by name, or None."""
    result = read_bench(workdir, name)
    if result is None:
        failures.append(f"{name}: no result")
        return None
    targets = {t["name"]: t for t in result["targets"]}
    for r in routes:
        if r not in targets or not targets[r]["e2e_ms"]["count"]:
            failures.append(f"{name}: {r} has no successful request")
            return None
        if targets[r]["errors"]:
            failures.append(f"{name}: {r}: {targets[r]['errors']} errors")
    return targets


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
    """ok: True, False, or None when the row could not be measured in this run."""
    if ok is None:
        return "not measurable"
    return "met" if ok else "**NOT MET**"


def main():
    workdir = sys.argv[1]
    run = key_values(read(workdir, "run.txt") or "")
    wrk = {(r, m): load_wrk(workdir, r, m, 64) for r in ROUTES for m, _ in MODES}
    rows = []
    failures = []
    for (r, m), w in wrk.items():
        if w is None and r in ACCOUNTING_ROUTES:
            continue
        if w is None:
            failures.append(f"{r} {m} c=64: no result")
            continue
        if w["all_failed"]:
            failures.append(f"{r} {m} c=64: {w['all_failed']} failed requests")
        if str(w["rounds"]) != run.get("rounds"):
            failures.append(f"{r} {m} c=64: {w['rounds']} of {run.get('rounds', '?')} rounds have a result")
    # Concurrency 1: interleaved bench runs (direct, nginx, TokenRadar; Portkey against direct).
    c1 = {m: load_bench(workdir, f"bench-{m}-c1.json", ["direct", "nginx", "tokenradar"], failures) for m, _ in MODES}
    c1_portkey = {m: load_bench(workdir, f"bench-{m}-c1-portkey.json", ["direct", "portkey"], failures)
                  for m, _ in MODES}
    # 64 in flight behind a 20 ms upstream: one interleaved open-loop bench run per request
    # kind (older work directories have none).
    c64_llm = {m: load_bench(workdir, f"bench-{m}-c64-llm.json", LLM_ROUTES, failures)
               if os.path.exists(os.path.join(workdir, f"bench-{m}-c64-llm.json")) else None for m, _ in MODES}
    # An open loop measures the proxies only while the client sends on time.
    llm_client = []
    for m, label in MODES:
        if c64_llm[m]:
            client = read_bench(workdir, f"bench-{m}-c64-llm.json")["run"]
            lag = client["client_sched_lag_ms"]["p99"]
            llm_client.append(f"{label} lag p99 {lag:.1f} ms, CPU {100 * client['cpu_s'] / client['wall_s']:.0f}%")
            if lag > CLIENT_LAG_MAX_MS:
                failures.append(f"bench-{m}-c64-llm.json: the client's scheduling lag p99 was {lag:.1f} ms "
                                f"(over {CLIENT_LAG_MAX_MS} ms): the client, not the proxies, set those latencies")

    def ratio_cells(ngx, tr):
        # A route whose percentile came in under direct's added nothing measurable: its
        # ratio is no number (a negative one would read as better than nginx by a factor).
        # When neither proxy's did, direct's own tail was the largest: no verdict.
        if tr <= 0 and ngx <= 0:
            return "n/a (neither added anything)", None
        if tr <= 0:
            return "n/a (added nothing)", True
        if ngx > 0:
            return f"{tr / ngx:.2f}x", tr <= ADDED_RATIO_MAX * ngx
        return "n/a (nginx added nothing)", False

    def interleaved_rows(what, b, routes, portkey_run=None):
        """Added latency rows from one interleaved bench run; routes: (direct, nginx, TokenRadar)."""
        direct, nginx, tokenradar = routes
        for q in ("p50", "p99"):
            add = {r: b[r]["e2e_ms"][q] - b[direct]["e2e_ms"][q] for r in (nginx, tokenradar)}
            portkey = ""
            if portkey_run:
                portkey = added(portkey_run["portkey"]["e2e_ms"][q] - portkey_run["direct"]["e2e_ms"][q])
            ratio, ok = ratio_cells(add[nginx], add[tokenradar])
            rows.append([f"{what}: latency {q}, added (bench, interleaved)", ms(b[direct]["e2e_ms"][q]),
                         added(add[nginx]), added(add[tokenradar]), "", portkey, ratio,
                         f"<= {ADDED_RATIO_MAX}x", verdict(ok)])

    # Added latency: the route's latency minus direct's, same request kind and concurrency;
    # at c=1 from one interleaved bench run (end to end), at c=64 from wrk.
    for mode, label in MODES:
        if c1[mode]:
            interleaved_rows(f"{label} c=1", c1[mode], ("direct", "nginx", "tokenradar"), c1_portkey[mode])
        d = wrk[("direct", mode)]
        if d is None or any(wrk[(r, mode)] is None for r in JUDGED_PROXIES):
            continue
        for q in ("p50", "p99"):
            key = f"{q}_ms"
            add = {r: wrk[(r, mode)][key] - d[key] for r in ROUTES[1:] if wrk[(r, mode)] is not None}
            ratio, ok = ratio_cells(add["nginx"], add["tokenradar"])
            nostore = ""
            if "tokenradar-nostore" in add:
                nostore = f"{added(add['tokenradar-nostore'])} ({ratio_cells(add['nginx'], add['tokenradar-nostore'])[0]})"
            rows.append([f"{label} c=64: latency {q}, added (wrk)", ms(d[key]), added(add["nginx"]),
                         added(add["tokenradar"]), nostore, added(add["portkey"]), ratio,
                         f"<= {ADDED_RATIO_MAX}x", verdict(ok)])

    # 64 in flight without a saturated core: what each proxy adds behind a 20 ms upstream
    # (3,200 requests/s over the three routes, open loop: ~21 in flight on each).
    for mode, label in MODES:
        if c64_llm[mode]:
            interleaved_rows(f"{label} 64 in flight over 3 routes, 20 ms upstream", c64_llm[mode], LLM_ROUTES)

    # Request rate at concurrency 64, and the CPU each route's proxy spent per request.
    for mode, label in MODES:
        w = {r: wrk[(r, mode)] for r in ROUTES}
        if any(w[r] is None for r in ["direct", *JUDGED_PROXIES]):
            continue
        direct = w["direct"]["rps"]

        def rate_cell(r):
            if w[r] is None:
                return ""
            cell = f"{w[r]['rps']:,.0f} ({100 * w[r]['rps'] / direct:.0f}%)"
            if r in ACCOUNTING_ROUTES:
                cell += f", {100 * w[r]['rps'] / w['nginx']['rps']:.0f}% of nginx's"
            return cell

        ratio = w["tokenradar"]["rps"] / w["nginx"]["rps"]
        rows.append([f"{label} c=64: requests/s (% of direct)", f"{direct:,.0f}", *map(rate_cell, ROUTES[1:]),
                     f"{100 * ratio:.0f}%", f">= {100 * RATE_RATIO_MIN:.0f}%", verdict(ratio >= RATE_RATIO_MIN)])
        cpu = [f"{w[r]['cpu_us_per_req']:.0f} us" if w[r] is not None else "" for r in ROUTES]
        rows.append([f"{label} c=64: CPU per request (proxy; direct: the sim)", *cpu,
                     f"{w['tokenradar']['cpu_us_per_req'] / w['nginx']['cpu_us_per_req']:.2f}x", "", ""])

    # Streaming TTFT, from the c=1 stream runs.
    b, bp = c1["stream"], c1_portkey["stream"]
    if b:
        p50 = {r: b[r]["ttft_ms"]["p50"] for r in b}
        portkey_added = added(bp["portkey"]["ttft_ms"]["p50"] - bp["direct"]["ttft_ms"]["p50"]) if bp else ""
        tr_added = p50["tokenradar"] - p50["direct"]
        rows.append(["stream c=1: TTFT p50, added (bench, interleaved)", ms(p50["direct"]),
                     added(p50["nginx"] - p50["direct"]), added(tr_added), "", portkey_added,
                     f"{tr_added / (p50['nginx'] - p50['direct']):.2f}x" if p50["nginx"] > p50["direct"] else "",
                     f"TokenRadar < {TTFT_ADDED_MAX_MS} ms", verdict(tr_added < TTFT_ADDED_MAX_MS)])

    # Per-chunk relay delay from TokenRadar's own histogram, per streaming run.
    relay = []
    streams = {1: c1["stream"]["tokenradar"]["requests"] if c1["stream"] else None,
               64: wrk[("tokenradar", "stream")]["all_requests"] if wrk[("tokenradar", "stream")] else None}
    for c in (1, 64):
        bound, chunks = relay_p99(workdir, "stream", c)
        if bound is not None and streams[c]:
            relay.append((c, bound, chunks / streams[c]))
    if relay:
        text = " / ".join((f"c={c}: <= {b * 1e6:g} us" if b != math.inf else f"c={c}: > 100 ms") +
                          f" ({writes:.0f} writes per stream)" for c, b, writes in relay)
        ok = all(b <= RELAY_P99_MAX_S for _, b, _ in relay)
        rows.append(["stream: relay delay p99 per chunk (TokenRadar /metrics bucket)", "", "", text, "", "", "",
                     f"< {RELAY_P99_MAX_S * 1e6:.0f} us", verdict(ok)])

    mem = key_values(read(workdir, "memory.txt") or "")
    if mem:
        rss_mb = int(mem["rss_max_kb"]) / 1024
        rows.append([f"memory: RSS with {int(mem['streams']):,} open streams", "", "",
                     f"{rss_mb:.1f} MB (idle {int(mem['rss_idle_kb']) / 1024:.1f}, HWM {int(mem['hwm_kb']) / 1024:.1f}; "
                     f"{mem['active_at_max']} in flight)", "", "", "", f"< {RSS_MAX_MB} MB", verdict(rss_mb < RSS_MAX_MB)])

    header = ["measure", "direct", "nginx", "TokenRadar", "TokenRadar, store off", "Portkey", "TokenRadar vs nginx",
              "target", ""]
    print()
    print("| " + " | ".join(header) + " |")
    print("| " + " | ".join(["---"] + ["---:"] * 6 + ["---", "---"]) + " |")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    print()
    pinned = "clients on CPU 0, upstream and proxy on CPU 1" if run.get("pinned") == "yes" else "not pinned"
    print(f"{run.get('seconds', '?')} s per scenario (c=64: each route's median of {run.get('rounds', '?')} "
          f"rounds); streams of {run.get('stream_tokens', '?')} tokens (one SSE "
          f"event each); {pinned}; load average {run.get('loadavg_start', '?')} at the start, {run.get('loadavg_end', '?')} "
          f"at the end. TokenRadar: {(read(workdir, 'store.txt') or 'store=?').strip()}; "
          f"\"store off\": the same gateway with [store] path = \"\", at c=64 only.")
    if llm_client:
        print(f"20 ms upstream: {3 * int(run.get('seconds', 0))} s per request kind at 3,200 requests/s; "
              f"the client: {'; '.join(llm_client)}.")
    for f in failures:
        print(f"- failures: {f}")


if __name__ == "__main__":
    main()
