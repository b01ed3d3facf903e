#!/usr/bin/env bash
# TTFT parity of the gateway's doors (README "The Responses door's TTFT"): one `fixed` sim
# (TTFT 250 ms, 20 ms per token), one gateway (keyless, no store) with the sim as its OpenAI
# upstream, and one `tokenradar bench` run whose targets are interleaved (bench's randomised
# rounds): the gateway's Chat Completions door and its Responses door (bench's
# `openai-responses` client), and, as the floor, the sim's own two dialects asked directly.
# Prints a markdown table and each door's TTFT ratio to the Chat door's.
#   bench/doors/run.sh [requests]      requests per target (default 400), c=8
#   TOKENRADAR=path / KEEP=1 / PIN=0   another binary / keep the work directory / no pinning
# It builds nothing: `make build` (or the release preset's tokenradar) first.
set -euo pipefail
cd "$(dirname "$0")/../.."
. bench/lib.sh
requests=${1:-400}
bin=${TOKENRADAR:-build/release/tokenradar}
here=bench/doors

[ -x "$bin" ] || { echo "$bin missing: make build, or set TOKENRADAR=path" >&2; exit 1; }
export TOKENRADAR_BENCH_KEY=sk-bench OPENAI_API_KEY=sk-bench  # the sim takes any bearer key

pin_cpus 1
work_dir doorsbench
die() { echo "bench/doors: $*" >&2; exit 1; }

start_sim_server "$bin" fixed "$tmp/sim.log" "${server[@]}" || exit 1
gw_port=$(free_port)
fill "$here/tokenradar.toml" "$tmp/gw.toml" PORT="$gw_port" SIM="$sim_port"
"${server[@]}" "$bin" --log-level warn serve --config "$tmp/gw.toml" >"$tmp/gw.log" 2>&1 &
pids+=($!)
wait_ready "http://127.0.0.1:$gw_port/healthz" || die "tokenradar serve did not start: $(tail -3 "$tmp/gw.log")"
gw="http://127.0.0.1:$gw_port/v1"
sim="http://127.0.0.1:$sim_port/v1"
echo "requests=$requests c=8 pinned=$(pinned) loadavg_start=$(cut -d' ' -f1 /proc/loadavg)" > "$tmp/run.txt"

echo "bench/doors: $requests streams of 5 tokens per target at c=8, interleaved" >&2
"${client[@]}" "$bin" --log-level warn bench \
    --target "gw-chat=openai:$gw#fixed" --target "gw-responses=openai-responses:$gw#fixed" \
    --target "sim-chat=openai:$sim#fixed" --target "sim-responses=openai-responses:$sim#fixed" \
    --workload "$here/short.toml" --requests "$requests" --concurrency 8 --warmup 16 \
    --format json > "$tmp/bench.json"
echo "loadavg_end=$(cut -d' ' -f1 /proc/loadavg)" >> "$tmp/run.txt"

python3 - "$tmp" <<'PY'
import json, sys
tmp = sys.argv[1]
with open(f"{tmp}/bench.json") as f:
    t = {x["name"]: x for x in json.load(f)["targets"]}
print(open(f"{tmp}/run.txt").read().strip().replace("\n", " "))
print()
print("| door -> upstream | TTFT p50 (ms) | TTFT mean (ms) | TTFT p95 (ms) | p50 / Chat door's | errors |")
print("| --- | ---: | ---: | ---: | ---: | ---: |")
rows = [("gw-chat", "gateway Chat Completions -> sim (openai)", "gw-chat"),
        ("gw-responses", "gateway Responses -> sim (openai)", "gw-chat"),
        ("sim-chat", "sim's Chat Completions, direct", "sim-chat"),
        ("sim-responses", "sim's Responses, direct", "sim-chat")]
for name, label, base in rows:
    ttft = t[name]["ttft_ms"]
    ratio = ttft["p50"] / t[base]["ttft_ms"]["p50"]
    print(f"| {label} | {ttft['p50']:.2f} | {ttft['mean']:.2f} | {ttft['p95']:.2f} | {ratio:.4f} | {t[name]['errors']} |")
PY
