#!/usr/bin/env bash
# bench's own limits: request rate next to wrk against the same instant sim, in
# one run; and 10,000 concurrent streams from one bench process.
#   bench/client/run.sh [seconds]     (default 10)
#   TOKENRADAR=path bench/client/run.sh   measure another tokenradar binary
#   PARTS=rate (or streams) bench/client/run.sh   only one of the two parts
set -euo pipefail
cd "$(dirname "$0")/../.."
. bench/lib.sh
seconds=${1:-10}
bin=${TOKENRADAR:-build/release/tokenradar}
parts=${PARTS:-rate,streams}
[ -x "$bin" ] || { echo "$bin missing: make build, or set TOKENRADAR=path" >&2; exit 1; }
ulimit -n "$(ulimit -Hn)"
export OPENAI_API_KEY=sk-bench

start_sim() {  # start_sim PROFILE THREADS -> sets port, sim_pid
    port=$(free_port)
    "$bin" --log-level warn sim --profile "$1" --port "$port" --threads "$2" >/dev/null &
    sim_pid=$!
    wait_ready "http://127.0.0.1:$port/healthz" || true
}

# 1. Non-streaming small requests, concurrency 64, wrk then bench against one instant sim.
if [[ $parts == *rate* ]]; then
start_sim instant 1
TIMEFORMAT='%U %S'  # wrk's user and system CPU seconds, for its CPU per request
wrk_out=$( { time wrk -t1 -c64 -d"${seconds}s" -s bench/client/nonstream.lua \
               "http://127.0.0.1:$port/v1/chat/completions" 2>&1; } 2>&1 )
wrk_rps=$(awk '/Requests\/sec/ {print $2}' <<<"$wrk_out")
wrk_requests=$(awk '/requests in/ {print $1}' <<<"$wrk_out")
wrk_cpu=$(tail -n1 <<<"$wrk_out" | awk '{print $1 + $2}')
bench_json=$("$bin" --log-level warn bench --target sim=openai:http://127.0.0.1:$port/v1#gpt-4o \
    --workload bench/client/nonstream.toml --duration "${seconds}s" --concurrency 64 --threads "${BENCH_THREADS:-2}" --format json)
kill -INT "$sim_pid"; wait "$sim_pid" || true
python3 - "$wrk_rps" "$bench_json" "$wrk_cpu" "$wrk_requests" <<'PY'
import json, sys
wrk = float(sys.argv[1]); s = json.loads(sys.argv[2]); wrk_cpu = float(sys.argv[3]); wrk_requests = int(sys.argv[4])
t = s["targets"][0]
rps = t["requests"] / s["run"]["wall_s"]
print(f"non-stream c=64: wrk {wrk:,.0f} req/s, bench {rps:,.0f} req/s = {100*rps/wrk:.0f}% of wrk "
      f"(errors {t['errors']}, bench CPU {s['run']['cpu_s']:.1f}s over {s['run']['wall_s']:.1f}s); "
      f"CPU per request: bench {1e6*s['run']['cpu_s']/t['requests']:.1f} us, wrk {1e6*wrk_cpu/wrk_requests:.1f} us")
PY
fi

# 2. 10,000 concurrent streams: open loop, 2,000 arrivals/s for 5 s, each stream 20 tokens
#    at one per second (about 20 s long), against one sim.
[[ $parts == *streams* ]] || exit 0
start_sim instant 1
bench_json=$("$bin" --log-level warn bench --target sim=openai:http://127.0.0.1:$port/v1#gpt-4o \
    --workload bench/client/slowstream.toml --rate 2000 --arrival constant --duration 5s \
    --header 'x-sim-tpot-ms: 1000' --header 'x-sim-tokens-per-chunk: 1' --format json --no-preflight)
kill -INT "$sim_pid"; wait "$sim_pid" || true
python3 - "$bench_json" <<'PY'
import json, sys
s = json.loads(sys.argv[1]); r = s["run"]; t = s["targets"][0]
per_k = 100 * r["cpu_s"] / r["wall_s"] / (r["peak_in_flight"] / 1000)
print(f"streams: peak {r['peak_in_flight']:,} in flight, {t['requests']:,} requests, {t['errors']} errors, "
      f"scheduling lag p99 {r['client_sched_lag_ms']['p99']:.2f} ms (max {r['client_sched_lag_ms']['max']:.2f}), "
      f"CPU {r['cpu_s']:.1f}s over {r['wall_s']:.1f}s = {per_k:.1f}% of a core per 1,000 streams")
PY
