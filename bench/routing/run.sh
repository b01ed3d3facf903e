#!/usr/bin/env bash
# The routing targets (README "Routing"), each measured side by side in one interleaved
# `tokenradar bench` run through one gateway (bench/routing/tokenradar.toml) in front of sims:
#   (a) heavy tail: two replicas (bench/routing/tail.toml: 200 ms TTFT, 5% of requests 10x).
#       `tail-priority` vs `tail-hedge` (hedge after the primary's p90, budget 10%). Target:
#       TTFT p99 at least 50% lower with hedging, at most 10% extra upstream requests.
#   (b) one of three replicas becomes 3x slower for 30 s (POST /sim/control), then recovers.
#       `replicas-latency` (latency routing over the three) vs `replicas-healthy` (two other
#       healthy replicas alone). Targets: within 10 s at least 90% of new requests avoid the
#       slow one; mean TTFT within 15% of the healthy pair's; traffic comes back afterwards.
#   (c) 16 applications' ~2k-token system prompts over four replicas with prefix caches that
#       hold about five each (bench/routing/prefix.toml): `prefix-affinity` vs
#       `prefix-round-robin`, each on its own four replicas. Targets: mean TTFT at least 30%
#       lower with affinity; the busiest replica under 1.5x the mean load.
#   bench/routing/run.sh [requests]    (a) and (c) requests per target (default 600; ~5 min)
#   SLOW_AFTER=20 SLOW_FOR=30 RUN_FOR=80 (b)'s timeline in seconds
#   TOKENRADAR=path / KEEP=1 / PIN=0   another binary / keep the work directory / no pinning
# It builds nothing: `make build` (or the release preset's tokenradar) first.
set -euo pipefail
cd "$(dirname "$0")/../.."
. bench/lib.sh
requests=${1:-600}
bin=${TOKENRADAR:-build/release/tokenradar}
here=bench/routing
slow_after=${SLOW_AFTER:-20}
slow_for=${SLOW_FOR:-30}
run_for=${RUN_FOR:-80}

[ -x "$bin" ] || { echo "$bin missing: make build, or set TOKENRADAR=path" >&2; exit 1; }
ulimit -n "$(ulimit -Hn)"
export TOKENRADAR_BENCH_KEY=sk-bench OPENAI_API_KEY=sk-bench  # the sims take any bearer key

pin_cpus 1
work_dir routingbench
die() { echo "bench/routing: $*" >&2; exit 1; }

declare -A port
start() {  # start NAME PROFILE_FILE
    start_sim_server "$bin" "$2" "$tmp/sim-$1.log" "${server[@]}" || exit 1
    port[$1]=$sim_port
}
for i in 1 2; do start "tail-$i" "$here/tail.toml"; done
for i in 1 2 3 4 5; do start "replica-$i" "$here/replica.toml"; done
for k in a r; do for i in 1 2 3 4; do start "prefix-$k$i" "$here/prefix.toml"; done; done

gw_port=$(free_port)
fill "$here/tokenradar.toml" "$tmp/gw.toml" PORT="$gw_port" STORE="$tmp/gw.db" \
    TAIL1="${port[tail-1]}" TAIL2="${port[tail-2]}" \
    REPLICA1="${port[replica-1]}" REPLICA2="${port[replica-2]}" REPLICA3="${port[replica-3]}" \
    REPLICA4="${port[replica-4]}" REPLICA5="${port[replica-5]}" \
    PREFIX_A1="${port[prefix-a1]}" PREFIX_A2="${port[prefix-a2]}" PREFIX_A3="${port[prefix-a3]}" \
    PREFIX_A4="${port[prefix-a4]}" PREFIX_R1="${port[prefix-r1]}" PREFIX_R2="${port[prefix-r2]}" \
    PREFIX_R3="${port[prefix-r3]}" PREFIX_R4="${port[prefix-r4]}"
"${server[@]}" "$bin" --log-level warn serve --config "$tmp/gw.toml" >"$tmp/gw.log" 2>&1 &
pids+=($!)
wait_ready "http://127.0.0.1:$gw_port/healthz" || die "tokenradar serve did not start: $(tail -3 "$tmp/gw.log")"
gw="http://127.0.0.1:$gw_port/v1"
echo "requests=$requests slow_after=$slow_after slow_for=$slow_for run_for=$run_for pinned=$(pinned) loadavg_start=$(cut -d' ' -f1 /proc/loadavg)" > "$tmp/run.txt"

sim_requests() { curl -sf "http://127.0.0.1:${port[$1]}/sim/stats" | python3 -c 'import json,sys; print(json.load(sys.stdin)["requests"])'; }
bench_json() {  # bench_json OUT WORKLOAD SHAPE... -- TARGET...
    local out=$1 workload=$2 shape=() targets=()
    shift 2
    while [ "$1" != -- ]; do shape+=("$1"); shift; done
    shift
    for t in "$@"; do targets+=(--target "$t"); done
    "${client[@]}" "$bin" --log-level warn bench "${targets[@]}" --workload "$workload" \
        "${shape[@]}" --format json > "$tmp/$out"
}

echo "bench/routing: (a) heavy tail, priority vs hedged, $requests requests each at c=8" >&2
bench_json a.json "$here/short.toml" --concurrency 8 --requests "$requests" --warmup 30 -- \
    "priority=openai:$gw#tail-priority" "hedge=openai:$gw#tail-hedge"
for i in 1 2; do sim_requests "tail-$i"; done > "$tmp/a-sim.txt"
curl -sf "http://127.0.0.1:$gw_port/api/v1/upstreams" > "$tmp/a-upstreams.json"

echo "bench/routing: (b) replica-3 3x slower from ${slow_after}s for ${slow_for}s, ${run_for}s at c=8 per model" >&2
(
    sleep "$slow_after"
    curl -sf -X POST "http://127.0.0.1:${port[replica-3]}/sim/control" -H 'authorization: Bearer sk-bench' \
        -H 'content-type: application/json' -d "{\"ttft_multiplier\": 3, \"for_ms\": $((slow_for * 1000))}" > /dev/null
) &
pids+=($!)
(
    # One line a second: seconds since start, and each replica's requests so far.
    start_s=$(date +%s.%N)
    while true; do
        now=$(date +%s.%N)
        echo "$(python3 -c "print(round($now - $start_s, 2))") $(sim_requests replica-1) $(sim_requests replica-2) $(sim_requests replica-3)"
        sleep 1
    done
) > "$tmp/b-shares.txt" 2>/dev/null &
sampler=$!
pids+=($sampler)
bench_json b.json "$here/short.toml" --concurrency 8 --duration "${run_for}s" -- \
    "latency=openai:$gw#replicas-latency" "healthy=openai:$gw#replicas-healthy"
kill "$sampler" 2>/dev/null || true

echo "bench/routing: (c) 16 system prompts over 4 prefix-cache replicas, affinity vs round robin, $requests requests each at c=8" >&2
bench_json c.json "$here/prefix-apps.toml" --concurrency 8 --requests "$requests" -- \
    "affinity=openai:$gw#prefix-affinity" "round-robin=openai:$gw#prefix-round-robin"
for k in a r; do for i in 1 2 3 4; do echo "$k $(sim_requests "prefix-$k$i")"; done; done > "$tmp/c-sim.txt"
echo "loadavg_end=$(cut -d' ' -f1 /proc/loadavg)" >> "$tmp/run.txt"

python3 - "$tmp" "$slow_after" "$slow_for" <<'PY'
import json, sys
tmp, slow_after, slow_for = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
def targets(name):
    with open(f"{tmp}/{name}") as f:
        return {t["name"]: t for t in json.load(f)["targets"]}
def verdict(ok):
    return "met" if ok else "**NOT MET**"
print(open(f"{tmp}/run.txt").read().strip().replace("\n", " "))
print()
print("| measure | strategy | baseline | ratio | target | |")
print("| --- | ---: | ---: | ---: | --- | --- |")

a = targets("a.json")
hp, pp = a["hedge"]["ttft_ms"]["p99"], a["priority"]["ttft_ms"]["p99"]
print(f"| (a) TTFT p99, hedged / priority | {hp:.1f} ms | {pp:.1f} ms | {hp / pp:.2f}x ({1 - hp / pp:.0%} lower) | >= 50% lower | {verdict(hp <= pp / 2)} |")
for p in ("p50", "p90", "mean"):
    h, q = a["hedge"]["ttft_ms"][p], a["priority"]["ttft_ms"][p]
    print(f"| (a) TTFT {p}, hedged / priority | {h:.1f} ms | {q:.1f} ms | {h / q:.2f}x | | |")
ups = json.load(open(f"{tmp}/a-upstreams.json"))
sent = sum(u["hedges"]["sent"] for u in ups["upstreams"] if u["provider"].startswith("tail-"))
won = sum(u["hedges"]["won"] for u in ups["upstreams"] if u["provider"].startswith("tail-"))
# Every request the gateway took for the model: the measured ones, the warmup and the preflight.
hedged_requests = a["hedge"]["requests"] + 30 + 1
print(f"| (a) extra upstream requests of the hedged model | {sent} ({won} won) | {hedged_requests} requests | {sent / hedged_requests:.1%} | <= 10% | {verdict(sent <= 0.1 * hedged_requests)} |")

rows = [list(map(float, l.split())) for l in open(f"{tmp}/b-shares.txt") if len(l.split()) == 4]
def share_between(t0, t1):
    inside = [r for r in rows if t0 <= r[0] <= t1]
    if len(inside) < 2:
        return float("nan")
    first, last = inside[0], inside[-1]
    total = sum(last[i] - first[i] for i in (1, 2, 3))
    return (last[3] - first[3]) / total if total else float("nan")
before = share_between(2, slow_after)
settled = share_between(slow_after + 10, slow_after + slow_for)
first_s = share_between(slow_after, slow_after + 10)
after = share_between(slow_after + slow_for + 10, rows[-1][0] if rows else 0)
print(f"| (b) slow replica's share of new requests before / first 10 s / 10-{slow_for:.0f} s / after recovery + 10 s | {before:.1%} / {first_s:.1%} / {settled:.1%} / {after:.1%} | | | <= 10% from 10 s on, back after | {verdict(settled <= 0.10 and after >= 0.15)} |")
b = targets("b.json")
lm, hm = b["latency"]["ttft_ms"]["mean"], b["healthy"]["ttft_ms"]["mean"]
print(f"| (b) mean TTFT, three replicas (one slowed) / the healthy pair | {lm:.1f} ms | {hm:.1f} ms | {lm / hm:.2f}x | within 15% | {verdict(lm <= hm * 1.15)} |")

c = targets("c.json")
am, rm = c["affinity"]["ttft_ms"]["mean"], c["round-robin"]["ttft_ms"]["mean"]
print(f"| (c) mean TTFT, affinity / round robin | {am:.1f} ms | {rm:.1f} ms | {am / rm:.2f}x ({1 - am / rm:.0%} lower) | >= 30% lower | {verdict(am <= rm * 0.7)} |")
loads = {"a": [], "r": []}
for line in open(f"{tmp}/c-sim.txt"):
    k, n = line.split()
    loads[k].append(int(n))
for k, label in (("a", "affinity"), ("r", "round robin")):
    mean = sum(loads[k]) / len(loads[k])
    print(f"| (c) {label}: requests per replica, busiest / mean | {loads[k]} | | {max(loads[k]) / mean:.2f}x | < 1.5x | {verdict(max(loads[k]) < 1.5 * mean)} |")
PY
