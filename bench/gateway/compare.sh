#!/usr/bin/env bash
# Several tokenradar builds side by side: one instant sim, one gateway per binary (store on,
# tokenradar.toml), all on CPU 1, wrk on CPU 0. Each round runs every scenario on every
# binary in turn, so load from other processes hits them alike. Prints requests/s, the
# gateway's and the sim's CPU per request (/proc/PID/stat) and wrk's p50/p99 per run. Copy
# each build's binary somewhere first (a rebuild replaces build/release/tokenradar).
#   bench/gateway/compare.sh SECONDS ROUNDS BINARY...
#   SCENARIOS="nonstream:64 stream:64"   which MODE:CONNECTIONS runs, in order (default: all four)
#   WITH_NGINX=1   nginx (nginx.conf, one worker) before the same sim, one more route in every
#                  round: the ratio to it from alternated runs (its CPU is its worker's)
set -euo pipefail
cd "$(dirname "$0")/../.."
. bench/lib.sh
[ $# -ge 3 ] || { echo "usage: $0 SECONDS ROUNDS BINARY..." >&2; exit 2; }
secs=$1 rounds=$2
shift 2
bins=("$@")
work_dir gwcompare
export TOKENRADAR_BENCH_KEY=sk-bench
ulimit -n "$(ulimit -Hn)"

start_sim_server "${bins[0]}" instant "$tmp/sim.log" taskset -c 1 || exit 1
ports=() gw_pids=() names=()
for i in "${!bins[@]}"; do
    port=$(free_port)
    fill bench/gateway/tokenradar.toml "$tmp/gw$i.toml" PORT="$port" UPSTREAM_PORT="$sim_port" STORE="$tmp/gw$i.db"
    taskset -c 1 "${bins[$i]}" --log-level warn serve --config "$tmp/gw$i.toml" >"$tmp/gw$i.log" 2>&1 &
    gw_pids+=($!) pids+=($!) ports+=("$port") names+=("bin$i")
    wait_ready "http://127.0.0.1:$port/healthz" || { echo "${bins[$i]} did not start" >&2; exit 1; }
done
if [ "${WITH_NGINX:-0}" = 1 ]; then
    command -v nginx >/dev/null || { echo "nginx missing: bench/gateway/run.sh installs it" >&2; exit 1; }
    port=$(free_port)
    fill bench/gateway/nginx.conf "$tmp/nginx.conf" TMP="$tmp" PORT="$port" UPSTREAM_PORT="$sim_port"
    taskset -c 1 nginx -e "$tmp/nginx-error.log" -c "$tmp/nginx.conf" -g 'daemon off;' &
    pids+=($!)
    wait_ready "http://127.0.0.1:$port/healthz" || { echo "nginx did not start" >&2; exit 1; }
    gw_pids+=("$(pgrep -P "${pids[-1]}" | head -1)") ports+=("$port") names+=(nginx)
fi

# per_request TICKS REQUESTS: microseconds of CPU per request, one decimal (a tick is 10 ms).
per_request() { awk -v t="$1" -v n="$2" 'BEGIN { printf "%.1f", t * 10000 / n }'; }
# run INDEX MODE CONNECTIONS SECONDS
run() {
    local i=$1 mode=$2 c=$3 s=$4 script=bench/client/nonstream.lua env=() before after req
    if [ "$mode" = stream ]; then script=bench/sim/stream.lua env=(MAX_TOKENS=100); fi
    before=$(cpu_ticks "${gw_pids[$i]}") sim_before=$(cpu_ticks "$sim_pid")
    env REQUEST_SCRIPT="$script" "${env[@]}" taskset -c 0 wrk -t1 -c"$c" -d"${s}s" --timeout 10s \
        -s bench/gateway/wrk.lua "http://127.0.0.1:${ports[$i]}/v1/chat/completions" >"$tmp/wrk.txt"
    after=$(cpu_ticks "${gw_pids[$i]}") sim_after=$(cpu_ticks "$sim_pid")
    req=$(grep -o 'requests=[0-9]*' "$tmp/wrk.txt" | cut -d= -f2)
    if [ -z "$req" ] || [ "$req" -eq 0 ]; then
        echo "${names[$i]} $mode c=$c: no requests completed ($(tail -1 "$tmp/wrk.txt"))" >&2
        return 1
    fi
    # The sim's CPU per request too: it moves with the machine's slow spells, not with the
    # gateway, so a round where it rose was a slow one for every binary.
    echo "${names[$i]} $mode c=$c req/s=$((req / s)) cpu_us/req=$(per_request "$((after - before))" "$req")" \
        "sim_us/req=$(per_request "$((sim_after - sim_before))" "$req")" \
        "$(grep -o 'p50_us=[0-9]* p99_us=[0-9]*' "$tmp/wrk.txt")"
}
for i in "${!bins[@]}"; do echo "bin$i = ${bins[$i]}"; done
for i in "${!names[@]}"; do run "$i" nonstream 64 2 >/dev/null; run "$i" stream 64 2 >/dev/null; done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
for _ in $(seq "$rounds"); do
    for scenario in ${SCENARIOS:-nonstream:64 nonstream:1 stream:64 stream:1}; do
        for i in "${!names[@]}"; do run "$i" "${scenario%%:*}" "${scenario#*:}" "$secs"; done
    done
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
