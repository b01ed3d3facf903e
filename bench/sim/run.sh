#!/usr/bin/env bash
# Sim throughput and pacing, measured from a separate client process
# (wrk) on this machine. Prints one line per scenario; see README.md for the last numbers.
#   bench/sim/run.sh [seconds]          (default 10 s per scenario)
#   TOKENRADAR=path  measures another binary; SCENARIOS="fixed-1000 ..." runs only those;
#   SIM_THREADS=n    overrides the sim's I/O threads (2 in every scenario);
#   PIN=1            runs wrk on CPU 0 and the sim on CPU 1 (as bench/gateway does);
#   SIM_PREFIX=cmd   runs the sim under a command, e.g. "perf record -g --".
set -euo pipefail
cd "$(dirname "$0")/../.."
. bench/lib.sh
seconds=${1:-10}
bin=${TOKENRADAR:-build/release/tokenradar}
[ -x "$bin" ] || { echo "build first: make build" >&2; exit 1; }
command -v wrk >/dev/null || { echo "wrk missing: scripts/install-deps.sh" >&2; exit 1; }
ulimit -n 65536 2>/dev/null || true
pin_cpus 0
read -r -a prefix <<< "${SIM_PREFIX:-}"
server+=("${prefix[@]}")

# run_scenario NAME PROFILE THREADS CONNECTIONS MAX_TOKENS TOKENS_PER_CHUNK|- [SIM_OPTION...]
run_scenario() {
    local name=$1 profile=$2 threads=${SIM_THREADS:-$3} connections=$4 tokens=$5 port pid stats cpu0 cpu1 wrk_pid wrk_cpu
    if [ -n "${SCENARIOS:-}" ] && [[ " $SCENARIOS " != *" $name "* ]]; then return 0; fi
    if [ "$6" != - ]; then export TOKENS_PER_CHUNK=$6; else unset TOKENS_PER_CHUNK; fi
    shift 6
    port=$(free_port)
    "${server[@]}" "$bin" --log-level warn sim --profile "$profile" --port "$port" --threads "$threads" "$@" >/dev/null &
    pid=$!
    wait_ready "http://127.0.0.1:$port/healthz" || true
    cpu0=$(cpu_ticks "$pid")
    MAX_TOKENS=$tokens "${client[@]}" wrk -t1 -c"$connections" -d"${seconds}s" --timeout 30s -s bench/sim/stream.lua \
        "http://127.0.0.1:$port/v1/chat/completions" > "/tmp/tokenradar-wrk-$name.txt" &
    wrk_pid=$!
    sleep "$seconds"
    wrk_cpu=$(cpu_ticks "$wrk_pid" 2>/dev/null || echo 0)  # just before wrk exits
    wait "$wrk_pid"
    cpu1=$(cpu_ticks "$pid")
    stats=$(curl -sf "http://127.0.0.1:$port/sim/stats")
    kill -INT "$pid"; wait "$pid" || true
    python3 - "$name" "$seconds" "$stats" "/tmp/tokenradar-wrk-$name.txt" "$((cpu1 - cpu0))" "$wrk_cpu" <<'PY'
import json, os, re, sys
name, seconds, stats, wrk_file = sys.argv[1], float(sys.argv[2]), json.loads(sys.argv[3]), sys.argv[4]
cpu_s = int(sys.argv[5]) / os.sysconf("SC_CLK_TCK")  # the sim's user+system CPU during wrk
wrk_cpu_s = int(sys.argv[6]) / os.sysconf("SC_CLK_TCK")
wrk = open(wrk_file).read()
reqs = re.search(r"Requests/sec:\s+([\d.]+)", wrk)
errors = re.search(r"Non-2xx or 3xx responses: (\d+)", wrk)
print(f"{name}: {stats['chunks']/seconds:,.0f} chunks/s, {float(reqs.group(1)) if reqs else 0:,.0f} streams/s, "
      f"lateness p50 {stats['lateness']['p50_us']/1000:.3f} ms p99 {stats['lateness']['p99_us']/1000:.3f} ms "
      f"max {stats['lateness']['max_us']/1000:.3f} ms, non-2xx {errors.group(1) if errors else 0}, "
      f"sim CPU {cpu_s / seconds * 100:.0f}% of a core"
      + (f" = {cpu_s * 1e6 / stats['chunks']:.1f} us per chunk" if stats['chunks'] else "")
      + f", wrk CPU {wrk_cpu_s / seconds * 100:.0f}%")
PY
}

run_scenario instant-1000 instant 2 1000 100 -
run_scenario instant-1000-16tok instant 2 1000 100 16
run_scenario fixed-1000 fixed 2 1000 50 -
# The pacing target's configuration: real-time I/O threads (root) waking on a 250 us grid.
run_scenario fixed-1000-rt fixed 2 1000 50 - --realtime --pacing-quantum 250us
