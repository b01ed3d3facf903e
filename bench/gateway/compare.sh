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
    need_nginx
    port=$(free_port)
    fill bench/gateway/nginx.conf "$tmp/nginx.conf" TMP="$tmp" PORT="$port" UPSTREAM_PORT="$sim_port"
    taskset -c 1 nginx -e "$tmp/nginx-error.log" -c "$tmp/nginx.conf" -g 'daemon off;' &
    pids+=($!)
    wait_ready "http://127.0.0.1:$port/healthz" || { echo "nginx did not start" >&2; exit 1; }
    gw_pids+=("$(pgrep -P "${pids[-1]}" | head -1)") ports+=("$port") names+=(nginx)
fi

# run INDEX MODE CONNECTIONS SECONDS: one line (bench/lib.sh wrk_measure), the sim as upstream.
run() {
    wrk_measure "${names[$1]}" "$2" "$3" "$4" "http://127.0.0.1:${ports[$1]}/v1/chat/completions" \
        "${gw_pids[$1]}" "$sim_pid" taskset -c 0
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
