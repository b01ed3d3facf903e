#!/usr/bin/env bash
# The response cache's targets (issue 26), each measured side by side in one interleaved
# `tokenradar bench` run, through one gateway (bench/cache/tokenradar.toml) with a caching and
# a non-caching virtual model on the same sim:
#   (a) an exact hit, 1 KB non-streamed answer, c=1: the latency a hit adds over a direct
#       request to the instant sim, against what a miss adds (the same request to the model
#       with the cache off). Targets: the hit's added latency within 1.5x of the miss's (p50
#       and p99); the whole hit under 0.3 ms p99.
#   (b) a 500-token streamed hit replayed at once, c=1: time to the last byte (E2E). Target:
#       under 2 ms (p99).
#   (c) the faq workload (30% exact repeats, 20% reworded) against the gpt-4o-like sim, the
#       semantic cache (built-in embedder) on vs off. Target: median TTFT and E2E at least
#       40% lower with the cache.
#   (d) the same with every repeat exact (repeat_exact = 0.5, repeat_reworded = 0): what (c)
#       reads once the semantic tier catches the rewordings too (its ceiling).
#   bench/cache/run.sh [seconds]           (default 10 s for each of (a) and (b); ~3 min)
#   FAQ_REQUESTS=300 FAQ_CONCURRENCY=16    (c): requests per model, requests in flight
#   TOKENRADAR=path bench/cache/run.sh     measure another tokenradar binary
#   KEEP=1 / PIN=0                         keep the work directory / do not pin CPUs
# It builds nothing: `make build` (or the release preset's tokenradar) first.
set -euo pipefail
cd "$(dirname "$0")/../.."
. bench/lib.sh
seconds=${1:-10}
bin=${TOKENRADAR:-build/release/tokenradar}
here=bench/cache
faq_requests=${FAQ_REQUESTS:-300}
faq_concurrency=${FAQ_CONCURRENCY:-16}

[ -x "$bin" ] || { echo "$bin missing: make build, or set TOKENRADAR=path" >&2; exit 1; }
ulimit -n "$(ulimit -Hn)"
export TOKENRADAR_BENCH_KEY=sk-bench OPENAI_API_KEY=sk-bench  # the sims take any bearer key

# The client on CPU 0, the sims and the gateway on CPU 1.
pin_cpus 1
work_dir cachebench
die() { echo "bench/cache: $*" >&2; exit 1; }

start_sim_server "$bin" instant "$tmp/sim-instant.log" "${server[@]}" || exit 1
instant_port=$sim_port
start_sim_server "$bin" gpt-4o-like "$tmp/sim-llm.log" "${server[@]}" || exit 1
llm_port=$sim_port

gw_port=$(free_port)
fill "$here/tokenradar.toml" "$tmp/gw.toml" PORT="$gw_port" INSTANT_PORT="$instant_port" \
    LLM_PORT="$llm_port" STORE="$tmp/gw.db"
"${server[@]}" "$bin" --log-level warn serve --config "$tmp/gw.toml" >"$tmp/gw.log" 2>&1 &
pids+=($!)
wait_ready "http://127.0.0.1:$gw_port/healthz" || die "tokenradar serve did not start: $(tail -3 "$tmp/gw.log")"
gw="http://127.0.0.1:$gw_port/v1"
direct="http://127.0.0.1:$instant_port/v1"
echo "seconds=$seconds faq_requests=$faq_requests faq_concurrency=$faq_concurrency pinned=$(pinned) loadavg_start=$(cut -d' ' -f1 /proc/loadavg)" > "$tmp/run.txt"
machine_jitter "$(dirname "$bin")" > "$tmp/jitter.txt"

# bench_json OUT WORKLOAD SHAPE... -- TARGET...: one run, its JSON summary in $tmp/OUT.
bench_json() {
    local out=$1 workload=$2 shape=() targets=()
    shift 2
    while [ "$1" != -- ]; do shape+=("$1"); shift; done
    shift
    for t in "$@"; do targets+=(--target "$t"); done
    "${client[@]}" "$bin" --log-level warn bench "${targets[@]}" --workload "$workload" \
        "${shape[@]}" --format json > "$tmp/$out"
}
cache_stats() { curl -sf "http://127.0.0.1:$gw_port/api/v1/gateway/cache" > "$tmp/$1"; }

# The warmup (and the preflight before it) asks the one question first, so every measured
# request of `hit` is an exact hit; `miss` never caches; direct is the instant sim itself.
echo "bench/cache: (a) 1 KB non-stream, c=1, direct + hit + miss interleaved, ${seconds}s" >&2
bench_json a.json "$here/hit-1k.toml" --concurrency 1 --duration "${seconds}s" --warmup 20 -- \
    "direct=openai:$direct#gpt-4o" "hit=openai:$gw#hit" "miss=openai:$gw#miss"
cache_stats cache-a.json
echo "bench/cache: (b) 500-token stream, c=1, direct + hit + miss interleaved, ${seconds}s" >&2
bench_json b.json "$here/hit-500.toml" --concurrency 1 --duration "${seconds}s" --warmup 20 -- \
    "direct=openai:$direct#gpt-4o" "hit=openai:$gw#hit" "miss=openai:$gw#miss"
cache_stats cache-b.json
echo "bench/cache: (c) faq, gpt-4o-like sim, cache on + off interleaved, $faq_requests requests each at c=$faq_concurrency" >&2
bench_json c.json faq --concurrency "$faq_concurrency" --requests "$faq_requests" -- \
    "cache=openai:$gw#faq-cache" "nocache=openai:$gw#faq-nocache"
cache_stats cache-c.json
# (d): faq with its rewordings turned into exact repeats, and another system prompt, so none of
# (c)'s answers is in the cache.
sed -e 's/^name = .*/name = "faq-ceiling"/' -e 's/^repeat_exact = .*/repeat_exact = 0.5/' \
    -e 's/^repeat_reworded = .*/repeat_reworded = 0/' \
    -e 's/^system = "\(.*\)"$/system = "\1 (all repeats exact)"/' workloads/faq.toml > "$tmp/faq-ceiling.toml"
echo "bench/cache: (d) faq with every repeat exact, cache on + off interleaved, $faq_requests requests each at c=$faq_concurrency" >&2
bench_json d.json "$tmp/faq-ceiling.toml" --concurrency "$faq_concurrency" --requests "$faq_requests" -- \
    "cache=openai:$gw#faq-cache" "nocache=openai:$gw#faq-nocache"
cache_stats cache-d.json
echo "loadavg_end=$(cut -d' ' -f1 /proc/loadavg)" >> "$tmp/run.txt"

python3 - "$tmp" <<'PY'
import json, sys
tmp = sys.argv[1]
def load(name):
    with open(f"{tmp}/{name}") as f:
        return json.load(f)
def targets(name):
    return {t["name"]: t for t in load(name)["targets"]}
def q(t, metric, p):
    return t[metric][p]
def cache_model(name, model):
    return next(m for m in load(name)["models"] if m["model"] == model)
def ms(v):
    return f"{v:.3f} ms"
def verdict(ok):
    return "met" if ok else "**NOT MET**"

print(open(f"{tmp}/run.txt").read().strip().replace("\n", " "))
print(open(f"{tmp}/jitter.txt").read().strip())
print()
print("| measure | direct | hit | miss | ratio | target | |")
print("| --- | ---: | ---: | ---: | ---: | --- | --- |")
a = targets("a.json")
for p in ("p50", "p99"):
    d, h, m = (q(a[k], "e2e_ms", p) for k in ("direct", "hit", "miss"))
    ha, ma = h - d, m - d
    ratio = ha / ma if ma > 0 else float("inf")
    print(f"| (a) 1 KB non-stream c=1: latency {p}, added over direct | {ms(d)} | {ha:+.3f} ms | {ma:+.3f} ms "
          f"| {ratio:.2f}x | hit <= 1.5x miss | {verdict(ratio <= 1.5)} |")
for p in ("p50", "p99"):
    d, h, m = (q(a[k], "e2e_ms", p) for k in ("direct", "hit", "miss"))
    line = f"| (a) whole request {p} | {ms(d)} | {ms(h)} | {ms(m)} | hit/direct {h / d:.2f}x "
    print(line + (f"| hit < 0.3 ms | {verdict(h < 0.3)} |" if p == "p99" else "| | |"))
b = targets("b.json")
for p in ("p50", "p99"):
    d, h, m = (q(b[k], "e2e_ms", p) for k in ("direct", "hit", "miss"))
    line = f"| (b) 500-token stream c=1: time to last byte {p} | {ms(d)} | {ms(h)} | {ms(m)} | hit/direct {h / d:.2f}x "
    print(line + (f"| < 2 ms | {verdict(h < 2)} |" if p == "p99" else "| | |"))
for item, name, what in (("c", "c.json", "faq"), ("d", "d.json", "faq, every repeat exact")):
    c = targets(name)
    for metric, label in (("ttft_ms", "TTFT"), ("e2e_ms", "E2E")):
        on, off = q(c["cache"], metric, "p50"), q(c["nocache"], metric, "p50")
        cut = 1 - on / off
        print(f"| ({item}) {what}, gpt-4o-like: {label} p50, cache on / off | | {ms(on)} | {ms(off)} | {on / off:.2f}x ({cut:.0%} lower) "
              f"| >= 40% lower | {verdict(cut >= 0.4)} |")
    # The median is a cliff: below 50% hits it is a miss's (the misses' low tail), so the mean
    # shows what the hits save in between.
    for metric, label in (("ttft_ms", "TTFT"), ("e2e_ms", "E2E")):
        on, off = q(c["cache"], metric, "mean"), q(c["nocache"], metric, "mean")
        print(f"| ({item}) {what}: {label} mean, cache on / off | | {ms(on)} | {ms(off)} | {on / off:.2f}x ({1 - on / off:.0%} lower) | | |")
print()
# The counters are cumulative: (b) includes (a)'s, (d) includes (c)'s.
for name, model in (("cache-a.json", "hit"), ("cache-b.json", "hit"), ("cache-c.json", "faq-cache"), ("cache-d.json", "faq-cache")):
    m = cache_model(name, model)
    r = m["requests"]
    lookups = r["miss"] + r["exact"] + r["semantic"]
    print(f"{name[6:7]}: model {model}: requests {r}, hit rate {(r['exact'] + r['semantic']) / max(1, lookups):.1%}, "
          f"saved {m['saved_seconds']:.1f} s")
for name in ("a.json", "b.json", "c.json", "d.json"):
    for t in load(name)["targets"]:
        if t["errors"]:
            print(f"{name[0]}: {t['name']}: {t['errors']} errors {t['failures']}")
PY
