#!/usr/bin/env bash
# Instructions the gateway executes per request (user space, all its threads, store on), under
# valgrind's callgrind: a count that repeats from run to run whatever else the machine does,
# where CPU time on this shared VM moves 5-15% (compare.sh). Kernel time is not counted, so it
# ranks user-space changes; compare.sh and run.sh say what they are worth in requests/s.
# For each binary: one instant sim (not measured), the gateway under callgrind with a fresh
# store, 5 s of wrk at c=8 to warm up, then 20 s counted. Prints instructions per request
# and keeps the profile (callgrind_annotate --inclusive=yes FILE) when KEEP=1.
#   bench/gateway/instructions.sh [stream] BINARY...
# TEMPLATE=bench/gateway/tokenradar-keys.toml measures with client keys checked (REGISTRY: a
# key registry file for virtual keys, prepared beforehand; bench/README.md "Virtual keys").
# READY_TRIES: 0.1 s waits for the gateway to start under valgrind (300; more under load).
# UPSTREAM=canned: vs_nginx.sh's canned nginx upstream (a 735-byte reply, a 22-event stream)
# instead of the sim (its 100-event streams), so the count is that of issue 28's comparison.
set -euo pipefail
cd "$(dirname "$0")/../.."
. bench/lib.sh
mode=nonstream
if [ "${1:-}" = stream ]; then mode=stream; shift; fi
[ $# -ge 1 ] || { echo "usage: $0 [stream] BINARY..." >&2; exit 2; }
command -v valgrind >/dev/null || { echo "valgrind is not installed (scripts/install-deps.sh)" >&2; exit 1; }
work_dir instructions
export TOKENRADAR_BENCH_KEY=sk-bench

script=bench/client/nonstream.lua env=()
if [ "$mode" = stream ]; then script=bench/sim/stream.lua env=(MAX_TOKENS=100); fi
load() {  # load PORT SECONDS OUTPUT
    env REQUEST_SCRIPT="$script" "${env[@]}" taskset -c 0 wrk -t1 -c8 -d"$2s" --timeout 10s \
        -s bench/gateway/wrk.lua "http://127.0.0.1:$1/v1/chat/completions" >"$3"
}

if [ "${UPSTREAM:-sim}" = canned ]; then
    need_nginx
    server=(taskset -c 1) json_port=$(free_port) sse_port=$(free_port)
    start_nginx "$tmp/canned" bench/gateway/canned.conf JSON_PORT="$json_port" SSE_PORT="$sse_port" || exit 1
    upstream_port=$json_port
    if [ "$mode" = stream ]; then upstream_port=$sse_port; fi
    wait_ready "http://127.0.0.1:$upstream_port/healthz" || { echo "the canned upstream did not answer" >&2; exit 1; }
else
    start_sim_server "$1" instant "$tmp/sim.log" taskset -c 1 || exit 1
    upstream_port=$sim_port
fi

for i in $(seq 1 $#); do
    bin=${!i}
    port=$(free_port)
    fill "${TEMPLATE:-bench/gateway/tokenradar.toml}" "$tmp/gw$i.toml" PORT="$port" \
        UPSTREAM_PORT="$upstream_port" STORE="$tmp/gw$i.db" KEY_SHA256="${KEY_SHA256:-$(printf sk-bench | sha256sum | cut -c1-64)}" \
        REGISTRY_LINE="${REGISTRY:+registry = \"$REGISTRY\"}"
    taskset -c 1 valgrind --tool=callgrind --callgrind-out-file="$tmp/callgrind.$i.%p" \
        "$bin" --log-level warn serve --config "$tmp/gw$i.toml" >"$tmp/gw$i.log" 2>&1 &
    vg=$!
    pids+=("$vg")
    wait_ready "http://127.0.0.1:$port/healthz" "${READY_TRIES:-300}" || { echo "$bin did not start" >&2; exit 1; }
    load "$port" 5 "$tmp/warm$i.txt"
    sleep 1  # the store writer's last batch of the warm-up
    callgrind_control -z "$vg" >/dev/null 2>&1 || { echo "callgrind_control -z failed" >&2; exit 1; }
    load "$port" 20 "$tmp/wrk$i.txt"
    sleep 1
    callgrind_control -d "$vg" >/dev/null 2>&1 || { echo "callgrind_control -d failed" >&2; exit 1; }
    kill "$vg"
    wait "$vg" 2>/dev/null || true
    requests=$(grep -o 'requests=[0-9]*' "$tmp/wrk$i.txt" | cut -d= -f2)
    profile=$(ls "$tmp"/callgrind."$i".*.1)
    total=$(callgrind_annotate "$profile" 2>/dev/null | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }')
    if [ -z "$total" ] || [ "${requests:-0}" -eq 0 ]; then
        echo "$bin: no count (requests=${requests:-none}; see $tmp/gw$i.log)" >&2
        exit 1
    fi
    echo "$bin $mode (${UPSTREAM:-sim}) requests=$requests instructions/request=$((total / requests))" \
        "$(grep -o 'errors=[0-9]* non2xx=[0-9]*' "$tmp/wrk$i.txt")"
done
