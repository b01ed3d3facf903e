#!/usr/bin/env bash
# Issue 28's comparison in one command: TokenRadar against nginx as a plain reverse proxy
# (nginx.conf: one worker, keep-alive upstream pool, proxy_buffering off, access log off), both
# before the same instant upstream (canned.conf: nginx `return 200` with a canned ~700-byte
# chat completion, or a 22-event SSE stream), store on, nothing pinned. Each round, per request
# kind: wrk -c64 through nginx and TokenRadar (which goes first alternates), then wrk -c1
# direct, through nginx and through TokenRadar. Prints every run, then medians over rounds against
# the targets: CPU per request <= 1.3x nginx's, c=1 added latency p50 <= 1.5x nginx's.
#   bench/gateway/vs_nginx.sh [SECONDS] [ROUNDS]   (default 5 s per run, 5 rounds: ~5 min)
#   TOKENRADAR=path   the binary (default build/release/tokenradar)
#   STORE=0           the store off (default: on, a fresh SQLite file per gateway)
#   THREADS=N         `threads = N` in the gateway's [listener] (left out when unset)
#   PIN=1             wrk on CPU 0, upstream and proxies on CPU 1 (bench/lib.sh pin_cpus)
#   KEEP=1            keep the work directory (configs, logs, runs.txt)
set -euo pipefail
cd "$(dirname "$0")/../.."
. bench/lib.sh
secs=${1:-5} rounds=${2:-5}
bin=${TOKENRADAR:-build/release/tokenradar}
here=bench/gateway
[ -x "$bin" ] || { echo "$bin missing: make build, or set TOKENRADAR=path" >&2; exit 1; }
command -v wrk >/dev/null || { echo "wrk missing: scripts/install-deps.sh" >&2; exit 1; }
need_nginx
ulimit -n "$(ulimit -Hn)"
export TOKENRADAR_BENCH_KEY=sk-bench
pin_cpus 0  # the issue's numbers are unpinned: the scheduler's placement is part of the cost
work_dir vsnginx
die() { echo "bench/gateway/vs_nginx.sh: $*" >&2; exit 1; }

# The canned upstream: one nginx, a port per request kind (canned.conf says why).
declare -A port url cpu_pid
port[json]=$(free_port) port[stream]=$(free_port)
start_nginx "$tmp/canned" "$here/canned.conf" JSON_PORT="${port[json]}" SSE_PORT="${port[stream]}" || exit 1
upstream_pid=$nginx_worker

# Per request kind, the routes: direct (the canned upstream; its CPU counts for "direct"), an
# nginx proxy and a gateway in front of that kind's port, each with the benchmark's usual config.
for mode in json stream; do
    url[direct-$mode]="http://127.0.0.1:${port[$mode]}/v1/chat/completions"
    cpu_pid[direct-$mode]=$upstream_pid
    wait_ready "http://127.0.0.1:${port[$mode]}/healthz" || die "the canned upstream did not answer"

    nginx_port=$(free_port)
    start_nginx "$tmp/nginx-$mode" "$here/nginx.conf" PORT="$nginx_port" UPSTREAM_PORT="${port[$mode]}" || exit 1
    url[nginx-$mode]="http://127.0.0.1:$nginx_port/v1/chat/completions"
    cpu_pid[nginx-$mode]=$nginx_worker

    gw=$tmp/tokenradar-$mode gw_port=$(free_port) store=""
    [ "${STORE:-1}" != 0 ] && store="$gw.db"
    fill "$here/tokenradar.toml" "$gw.toml" PORT="$gw_port" UPSTREAM_PORT="${port[$mode]}" STORE="$store"
    # `threads` only when asked for: a binary without the key rejects the config.
    if [ -n "${THREADS:-}" ]; then sed -i "/^\[listener\]/a threads = $THREADS" "$gw.toml"; fi
    "${server[@]}" "$bin" --log-level warn serve --config "$gw.toml" >"$gw.log" 2>&1 &
    pids+=($!)
    url[tokenradar-$mode]="http://127.0.0.1:$gw_port/v1/chat/completions"
    cpu_pid[tokenradar-$mode]=$!
    wait_ready "http://127.0.0.1:$gw_port/healthz" || die "tokenradar did not start: $(tail -3 "$gw.log")"
    wait_ready "http://127.0.0.1:$nginx_port/healthz" || die "nginx ($mode) did not start"
done

# Every route answers both kinds whole before anything is timed.
for route in direct nginx tokenradar; do
    for mode in json stream; do
        stream=false want='"chat.completion"'
        [ "$mode" = stream ] && stream=true want='data: [DONE]'
        body=$(curl -sS --max-time 10 -H 'Content-Type: application/json' -H 'Authorization: Bearer sk-bench' \
            -d "{\"model\":\"gpt-4o\",\"stream\":$stream,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}" \
            "${url[$route-$mode]}") || die "$route ($mode) did not answer"
        [[ "$body" == *"$want"* ]] || die "$route ($mode) answered: ${body:0:300}"
    done
done

# measure ROUND ROUTE MODE CONNECTIONS: one run, its line on stdout and in runs.txt.
measure() {
    local line
    line=$(wrk_measure "$2" "$3" "$4" "$secs" "${url[$2-$3]}" "${cpu_pid[$2-$3]}" "$upstream_pid" "${client[@]}")
    echo "round=$1 $line" | tee -a "$tmp/runs.txt"
}
# Warm-up, not recorded: the proxies' upstream pools fill, the gateway's allocator grows.
for mode in json stream; do
    for route in nginx tokenradar; do
        wrk_measure "$route" "$mode" 64 2 "${url[$route-$mode]}" "${cpu_pid[$route-$mode]}" "$upstream_pid" \
            "${client[@]}" >/dev/null
    done
done

store_state=on
[ "${STORE:-1}" = 0 ] && store_state=off
echo "$(date -u '+%F %H:%M UTC') $bin seconds=$secs rounds=$rounds store=$store_state" \
    "threads=${THREADS:-default} pinned=$(pinned) load=$(cut -d' ' -f1-3 /proc/loadavg)"
# Rounds alternate the order, so neither proxy always runs first after the other's load, and
# the VM's slow spells (minutes long) land on both alike.
for round in $(seq "$rounds"); do
    pair=(nginx tokenradar) trio=(direct nginx tokenradar)
    if [ $((round % 2)) = 0 ]; then pair=(tokenradar nginx) trio=(tokenradar nginx direct); fi
    for mode in json stream; do
        for route in "${pair[@]}"; do measure "$round" "$route" "$mode" 64; done
        for route in "${trio[@]}"; do measure "$round" "$route" "$mode" 1; done
    done
done
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"

# The gateway's own account: every request ok, tokens from the canned usage (14 in, 43 out for
# JSON; 12 in, 20 out for the stream), records written (not dropped) when the store is on.
for mode in json stream; do
    curl -sf "${url[tokenradar-$mode]%/v1/*}/metrics" | awk -v mode="$mode" '
        /^tokenradar_requests_total/ { split($1, a, "\""); n[a[2]] += $2; total += $2 }
        /^gen_ai_usage_tokens_total/ { if ($1 ~ /input/) tin += $2; else tout += $2 }
        /^tokenradar_store_records_total/ { split($1, a, "\""); rec = rec " " a[2] "=" $2 }
        END { ok = n["ok"] ? n["ok"] : 1
              printf "tokenradar %s: %d requests, %d ok; tokens per ok request: in %.1f, out %.1f; store records:%s\n",
                     mode, total, n["ok"], tin / ok, tout / ok, rec }'
done

# The summary: medians over rounds. CPU and rate ratios are medians of each round's ratio (the
# two runs of a round are seconds apart, so they share the machine's state); added latency is
# a route's p50 or p99 minus direct's in the same round, and its ratio that of the medians.
python3 - "$tmp/runs.txt" <<'EOF'
import sys
from statistics import median
runs = {}  # (round, route, mode, connections) -> {measure: value}
for line in open(sys.argv[1]):
    f = line.split()
    kv = dict(x.split("=", 1) for x in f if "=" in x)
    runs[(kv.pop("round"), f[1], f[2], kv.pop("c"))] = {k: float(v) for k, v in kv.items()}
rounds = sorted({k[0] for k in runs})
def med(route, mode, c, key):
    return median(runs[(r, route, mode, c)][key] for r in rounds)
def paired(mode, key):  # the median of each round's TokenRadar / nginx
    return median(runs[(r, "tokenradar", mode, "64")][key] / runs[(r, "nginx", mode, "64")][key] for r in rounds)
def row(*cells):
    print("| " + " | ".join(cells) + " |")
def verdict(ratio, target):
    return "met" if ratio <= target else "**NOT MET**"
print()
row("measure", "direct", "nginx", "TokenRadar", "TokenRadar / nginx", "target", "")
row("---", "---:", "---:", "---:", "---:", "---", "---")
for mode, label in (("json", "JSON"), ("stream", "stream (22 events)")):
    def cpu(route):
        return "%.1f us (user %.1f, sys %.1f)" % tuple(
            med(route, mode, "64", k) for k in ("cpu_us/req", "user_us/req", "sys_us/req"))
    upstream = median(runs[(r, route, mode, "64")]["upstream_us/req"]
                      for r in rounds for route in ("nginx", "tokenradar"))
    ratio = paired(mode, "cpu_us/req")
    row(f"{label} c=64: CPU per request (direct: the upstream's)", f"{upstream:.1f} us", cpu("nginx"),
        cpu("tokenradar"), f"{ratio:.2f}x", "<= 1.3x", verdict(ratio, 1.3))
    row(f"{label} c=64: requests/s", "", f"{med('nginx', mode, '64', 'req/s'):,.0f}",
        f"{med('tokenradar', mode, '64', 'req/s'):,.0f}", f"{paired(mode, 'req/s'):.0%}", "", "")
    for p in ("p50", "p99"):
        key = p + "_us"
        added = {route: median(runs[(r, route, mode, "1")][key] - runs[(r, "direct", mode, "1")][key]
                               for r in rounds) for route in ("nginx", "tokenradar")}
        # nginx can add nothing measurable to a p99 that direct's own spikes set: no ratio then.
        ratio = added["tokenradar"] / added["nginx"] if added["nginx"] > 0 else None
        judged = p == "p50" and ratio is not None
        row(f"{label} c=1: latency {p}, added", f"{med('direct', mode, '1', key) / 1000:.3f} ms",
            f"{added['nginx'] / 1000:+.3f} ms", f"{added['tokenradar'] / 1000:+.3f} ms",
            f"{ratio:.2f}x" if ratio is not None else "n/a", "<= 1.5x" if p == "p50" else "",
            verdict(ratio, 1.5) if judged else "")
EOF
