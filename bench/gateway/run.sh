#!/usr/bin/env bash
# The gateway's overhead, everything side by side in one run: the same requests
# sent direct to an instant upstream (the sim), through nginx (a plain reverse proxy: the
# floor), through TokenRadar (metering on, store on when the binary has one; at c=64 also
# with the store off) and through Portkey's gateway. Prints one markdown table: added latency,
# request rate, ratios to nginx, streaming TTFT, TokenRadar's per-chunk relay delay and its
# memory with 1,000 open streams; and the latency added with 64 requests in flight (over
# three routes) behind a 20 ms upstream.
#   bench/gateway/run.sh [seconds]          (default 10 s per run: 10 x ROUNDS wrk runs at c=64,
#                                           4 bench runs at c=1, 2 runs of 3 x seconds with
#                                           64 in flight behind a 20 ms upstream, the memory run;
#                                           ~6 min at 4 s)
#   ROUNDS=3 bench/gateway/run.sh           rounds of the c=64 runs, every route in each round;
#                                           the table shows each route's median round
#   TOKENRADAR=path bench/gateway/run.sh    measure another tokenradar binary
#   KEEP=1 bench/gateway/run.sh             keep the work directory (logs, raw wrk output)
#   PIN=0 bench/gateway/run.sh              do not pin the client and the servers to CPUs
set -euo pipefail
cd "$(dirname "$0")/../.."
. bench/lib.sh
seconds=${1:-10}
bin=${TOKENRADAR:-build/release/tokenradar}
here=bench/gateway
rounds=${ROUNDS:-3}
stream_tokens=100  # tokens (= SSE events: the instant sim sends one token per chunk) per stream
memory_streams=1000

[ -x "$bin" ] || { echo "$bin missing: make build, or set TOKENRADAR=path" >&2; exit 1; }
command -v wrk >/dev/null || { echo "wrk missing: scripts/install-deps.sh" >&2; exit 1; }
command -v node >/dev/null || { echo "node missing (Portkey's gateway runs on it)" >&2; exit 1; }
need_nginx
if [ ! -d "$here/node_modules/@portkey-ai/gateway" ]; then
    echo "installing Portkey's gateway into $here/node_modules (package-lock.json)" >&2
    (cd "$here" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
fi
ulimit -n "$(ulimit -Hn)"
export TOKENRADAR_BENCH_KEY=sk-bench OPENAI_API_KEY=sk-bench  # the sim takes any bearer key

# The clients (wrk, bench) run on CPU 0, the upstream and the proxy on CPU 1.
pin_cpus 1
work_dir gwbench
echo "seconds=$seconds rounds=$rounds stream_tokens=$stream_tokens pinned=$(pinned) loadavg_start=$(cut -d' ' -f1 /proc/loadavg)" > "$tmp/run.txt"

die() { echo "bench/gateway: $*" >&2; exit 1; }
# start_sim NAME PROFILE -> sets sim_port, sim_pid (bench/lib.sh start_sim_server)
start_sim() { start_sim_server "$bin" "$2" "$tmp/sim-$1.log" "${server[@]}" || exit 1; }
# start_tokenradar NAME UPSTREAM_PORT [nostore] -> sets tr_port, tr_pid, store_state. The
# store is written to $tmp/NAME.db when the binary supports [store]; a binary that rejects
# the path runs with path = "" (metering and /metrics only), and store_state says so.
# `nostore` starts it with path = "" at once.
start_tokenradar() {
    local name=$1 upstream=$2 store="$tmp/$1.db" attempt attempts=(store nostore)
    [ "${3:-}" = nostore ] && attempts=(nostore)
    for attempt in "${attempts[@]}"; do
        [ "$attempt" = nostore ] && store=""
        tr_port=$(free_port)
        fill "$here/tokenradar.toml" "$tmp/$name.toml" PORT="$tr_port" UPSTREAM_PORT="$upstream" STORE="$store"
        "${server[@]}" "$bin" --log-level warn serve --config "$tmp/$name.toml" >"$tmp/$name.log" 2>&1 &
        tr_pid=$!
        pids+=($tr_pid)
        if wait_ready "http://127.0.0.1:$tr_port/healthz"; then
            if [ -n "$store" ]; then store_state="path $store"; fi
            return 0
        fi
        kill "$tr_pid" 2>/dev/null || true
        grep -qi store "$tmp/$name.log" || break
        store_state="rejected by this binary: $(tail -1 "$tmp/$name.log")"
        echo "tokenradar serve did not start with [store] path set, retrying without: $(tail -1 "$tmp/$name.log")" >&2
    done
    die "tokenradar serve did not start: $(tail -3 "$tmp/$name.log")"
}
stop() { kill -INT "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }

# --- upstream and proxies -------------------------------------------------------------------
# The upstream is the sim's instant profile: real OpenAI bodies (a usage chunk when asked,
# one SSE event per token) produced at once, so every route relays the same shape of
# stream; one thread, so its CPU cost is the same small share of the box on every route.
start_sim instant instant
upstream="http://127.0.0.1:$sim_port/v1"

nginx_port=$(free_port)
fill "$here/nginx.conf" "$tmp/nginx.conf" TMP="$tmp" PORT="$nginx_port" UPSTREAM_PORT="$sim_port"
"${server[@]}" nginx -e "$tmp/nginx-error.log" -c "$tmp/nginx.conf" -g 'daemon off;' &
nginx_pid=$!
pids+=($nginx_pid)

start_tokenradar gw "$sim_port"
gw_pid=$tr_pid gw_port=$tr_port gw_store_state=${store_state:-off}
# The same gateway with the store off: the price of writing every record, side by side. It
# runs at c=64 only (the issue's targets are for the store on; this column is the accounting).
start_tokenradar nostore "$sim_port" nostore
nostore_pid=$tr_pid nostore_port=$tr_port

portkey_port=$(free_port)
"${server[@]}" node --require "./$here/loopback.cjs" "$here/node_modules/@portkey-ai/gateway/build/start-server.js" \
    --port="$portkey_port" --headless >"$tmp/portkey.log" 2>&1 &
portkey_pid=$!
pids+=($portkey_pid)

wait_ready "http://127.0.0.1:$nginx_port/healthz" || die "nginx did not start: $(tail -3 "$tmp/nginx-error.log")"
wait_ready "http://127.0.0.1:$portkey_port/" 100 || die "Portkey did not start: $(tail -3 "$tmp/portkey.log")"
nginx_worker=$(pgrep -P "$nginx_pid" | head -1)

routes=(direct nginx tokenradar tokenradar-nostore portkey)
declare -A url=([direct]=$upstream [nginx]="http://127.0.0.1:$nginx_port/v1"
                [tokenradar]="http://127.0.0.1:$gw_port/v1"
                [tokenradar-nostore]="http://127.0.0.1:$nostore_port/v1"
                [portkey]="http://127.0.0.1:$portkey_port/v1")
# Whose CPU is counted per route: the proxy's; for direct, the upstream's own.
declare -A cpu_pids=([direct]=$sim_pid [nginx]=$nginx_worker [tokenradar]=$gw_pid
                     [tokenradar-nostore]=$nostore_pid [portkey]=$portkey_pid)

# request_env ROUTE SCRIPT: wrk.lua's environment (Portkey's routing header, stream length).
request_env() {
    local env=(REQUEST_SCRIPT="$2")
    [ "$1" = portkey ] && env+=(PORTKEY_HOST="$upstream")
    [ "$2" = bench/sim/stream.lua ] && env+=(MAX_TOKENS="$stream_tokens")
    printf '%s\n' "${env[@]}"
}
script_of() { if [ "$1" = stream ]; then echo bench/sim/stream.lua; else echo bench/client/nonstream.lua; fi; }

# Every route must answer both request kinds correctly before anything is timed.
for route in "${routes[@]}"; do
    for mode in nonstream stream; do
        headers=(-H 'Content-Type: application/json' -H 'Authorization: Bearer sk-bench')
        [ "$route" = portkey ] && headers+=(-H 'x-portkey-provider: openai' -H "x-portkey-custom-host: $upstream")
        stream=false; [ "$mode" = stream ] && stream=true
        body=$(curl -sS --max-time 10 "${headers[@]}" "${url[$route]}/chat/completions" \
            -d "{\"model\":\"gpt-4o\",\"stream\":$stream,\"max_tokens\":8,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}") ||
            die "$route ($mode) did not answer"
        case "$mode:$body" in
            stream:*"data: [DONE]"*|nonstream:*'"chat.completion"'*) ;;
            *) die "$route ($mode) answered: ${body:0:300}" ;;
        esac
    done
done

# run_wrk ROUTE MODE CONNECTIONS SECONDS OUT: one wrk run; the proxy's CPU ticks around it.
run_wrk() {
    local route=$1 mode=$2 c=$3 secs=$4 out=$5 before after vars
    mapfile -t vars < <(request_env "$route" "$(script_of "$mode")")
    before=$(cpu_ticks ${cpu_pids[$route]})
    env "${vars[@]}" "${client[@]}" wrk -t1 -c"$c" -d"${secs}s" --timeout 10s -s "$here/wrk.lua" \
        "${url[$route]}/chat/completions" > "$out"
    after=$(cpu_ticks ${cpu_pids[$route]})
    echo "CPU ticks=$((after - before))" >> "$out"
}

# Warm-up (connection pools, Portkey's JIT), not recorded.
for route in "${routes[@]}"; do
    for mode in nonstream stream; do run_wrk "$route" "$mode" 64 2 /dev/null; done
done 2>/dev/null || true

metrics() { curl -sf "http://127.0.0.1:$gw_port/metrics"; }
# Concurrency 64: wrk, one route at a time (each needs the machine to itself), in rounds that
# visit every route: this VM has slow spells of seconds to minutes (the sim alone took 18 or
# 31 us per small request in runs ten minutes apart), and one run per route put whole spells
# on one route. summary.py takes each route's median round.
for mode in nonstream stream; do
    metrics > "$tmp/metrics-before-$mode-c64.txt"
    for round in $(seq "$rounds"); do
        for route in "${routes[@]}"; do
            echo "wrk: $route $mode c=64, ${seconds}s, round $round of $rounds" >&2
            run_wrk "$route" "$mode" 64 "$seconds" "$tmp/wrk-$route-$mode-c64.r$round.txt"
        done
    done
    metrics > "$tmp/metrics-after-$mode-c64.txt"
done

# Concurrency 1: tokenradar bench, direct, nginx and TokenRadar in one run. Its closed loop
# interleaves the targets in shuffled rounds, so they share conditions: one wrk run per route
# after another compared tails from different seconds (direct's own p99 moved 1.0-3.3 ms
# between runs, while the proxies added tenths of a millisecond). The stream run gives the
# TTFT too. Portkey runs against direct in a run of its own: in the same rotation its node
# process (~30 ms per stream, on the servers' CPU) slowed every route (direct's TTFT p50
# 0.085 ms without it, 0.28-0.35 ms with it; the proxies' added TTFT doubled).
# bench_run MODE LOAD SECONDS OUT ROUTE...: one bench run over the routes, its JSON in $tmp/OUT.
# LOAD: cN, a closed loop with N requests in flight; or rN, an open loop of N requests/s over
# all routes (Poisson arrivals).
bench_run() {
    local mode=$1 load=$2 secs=$3 out=$4 route targets=() workload=bench/client/nonstream.toml
    local shape=()
    shift 4
    [ "$mode" = stream ] && workload=$here/stream.toml
    case "$load" in
        c*) shape=(--concurrency "${load#c}") ;;
        r*) shape=(--rate "${load#r}" --arrival poisson) ;;
        *) die "bench_run: load '$load': expected cN or rN" ;;
    esac
    for route in "$@"; do targets+=(--target "$route=openai:${url[$route]}#gpt-4o"); done
    "${client[@]}" "$bin" --log-level warn bench "${targets[@]}" --workload "$workload" "${shape[@]}" \
        --duration "${secs}s" --header 'x-portkey-provider: openai' \
        --header "x-portkey-custom-host: $upstream" --format json > "$tmp/$out"
}
for mode in nonstream stream; do
    echo "bench: $mode c=1, direct + nginx + tokenradar interleaved, ${seconds}s" >&2
    metrics > "$tmp/metrics-before-$mode-c1.txt"
    bench_run "$mode" c1 "$seconds" "bench-$mode-c1.json" direct nginx tokenradar
    metrics > "$tmp/metrics-after-$mode-c1.txt"
    echo "bench: $mode c=1, direct + portkey, ${seconds}s" >&2
    bench_run "$mode" c1 "$seconds" "bench-$mode-c1-portkey.json" direct portkey
done

# The store: the gateway's own counters (tokenradar_store_records_total), then its database.
store_metrics=$(metrics | awk '/^tokenradar_store_records_total/ { sub(/.*outcome="/, ""); sub(/"}/, ""); printf "%s=%s ", $1, $2 }')
stop "$gw_pid"  # lets the batch writer flush
if [ -n "$store_metrics" ] && [ -f "$tmp/gw.db" ]; then
    echo "store=on: records $store_metrics($(du -k "$tmp/gw.db" | cut -f1) KiB database)" > "$tmp/store.txt"
elif [[ "$gw_store_state" == rejected* ]]; then
    echo "store=off: [store] $gw_store_state" > "$tmp/store.txt"
else
    echo "store=off: [store] path was set, but this binary wrote no database (it ignores [store])" > "$tmp/store.txt"
fi

# --- 64 in flight behind an LLM-like upstream -------------------------------------------------
# Against the instant sim, 64 connections keep the server core saturated, so a route's
# latency at c=64 is about 64 / its request rate (Little's law): those rows restate the rate
# row. Here the upstream answers after 20 ms (llm.toml) and requests arrive at 3,200/s over the
# three routes in an open loop, so ~64 are in flight (Little's law again, ~21 per route) while
# the server core is not saturated: the latency a proxy adds to a request, not the queue of a
# saturated core (summary.py reports the client's own lag, and fails the run past 10 ms).
# 3,200/s per route (9,600 in all) was more than the one-core client could send of 100-event
# streams: its scheduling lag reached 94 ms and requests failed. A closed
# loop of 64 workers fell into step (64 requests at once every 20 ms, even when started
# 0.3 ms apart) and measured the queue of each burst: +0.7 ms p50 for every proxy, against
# +0.1 ms at Poisson arrivals. Direct, nginx and TokenRadar (store on) in one interleaved
# bench run, as at c=1, three times as long: at 4 s a route's p99 rested on ~40 requests, and
# one stall of any process on the core moved it by half a millisecond.
start_sim llm "$here/llm.toml"
llm_sim_pid=$sim_pid
llm_nginx_port=$(free_port)
mkdir -p "$tmp/nginx-llm"
fill "$here/nginx.conf" "$tmp/nginx-llm.conf" TMP="$tmp/nginx-llm" PORT="$llm_nginx_port" UPSTREAM_PORT="$sim_port"
"${server[@]}" nginx -e "$tmp/nginx-llm/nginx-error.log" -c "$tmp/nginx-llm.conf" -g 'daemon off;' &
llm_nginx_pid=$!
pids+=($llm_nginx_pid)
start_tokenradar llm "$sim_port"
llm_tr_pid=$tr_pid
wait_ready "http://127.0.0.1:$llm_nginx_port/healthz" || die "nginx (llm) did not start: $(tail -3 "$tmp/nginx-llm/nginx-error.log")"
url[direct-llm]="http://127.0.0.1:$sim_port/v1" url[nginx-llm]="http://127.0.0.1:$llm_nginx_port/v1"
url[tokenradar-llm]="http://127.0.0.1:$tr_port/v1"
for mode in nonstream stream; do
    # Unrecorded: fills the proxies' upstream pools (bench's own --warmup runs one request at
    # a time, so it would open one connection per route).
    bench_run "$mode" c64 1 "warmup-$mode-llm.json" direct-llm nginx-llm tokenradar-llm
    echo "bench: $mode 3,200/s behind a 20 ms upstream, direct + nginx + tokenradar interleaved, $((3 * seconds))s" >&2
    bench_run "$mode" r3200 "$((3 * seconds))" "bench-$mode-c64-llm.json" direct-llm nginx-llm tokenradar-llm
done
for pid in "$llm_tr_pid" "$llm_nginx_pid" "$llm_sim_pid"; do stop "$pid"; done

# --- memory with 1,000 open streams -----------------------------------------------------------
# A fresh gateway in front of a paced sim (bench/gateway/slow.toml: 20 s streams at 2 tokens/s)
# holds 1,000 streams for `seconds` while VmRSS is sampled.
start_sim slow "$here/slow.toml"
start_tokenradar mem "$sim_port"
mem_pid=$tr_pid mem_port=$tr_port
echo "memory: $memory_streams streams through a fresh gateway, ${seconds}s" >&2
rss_idle=$(awk '/^VmRSS/ { print $2 }' "/proc/$mem_pid/status")
MAX_TOKENS=40 REQUEST_SCRIPT=bench/sim/stream.lua "${client[@]}" wrk -t1 -c"$memory_streams" -d"$((seconds + 6))s" \
    --timeout 60s -s "$here/wrk.lua" "http://127.0.0.1:$mem_port/v1/chat/completions" > "$tmp/wrk-memory.txt" &
wrk_pid=$!
pids+=($wrk_pid)
sleep 3  # 1,000 connections and upstream streams opened
rss_max=0 active_at_max=0
for _ in $(seq $((seconds * 2))); do
    rss=$(awk '/^VmRSS/ { print $2 }' "/proc/$mem_pid/status")
    active=$(curl -sf "http://127.0.0.1:$mem_port/metrics" | awk '/^tokenradar_active_requests / { print $2 }')
    if [ "$rss" -gt "$rss_max" ]; then rss_max=$rss active_at_max=$active; fi
    sleep 0.5
done
hwm=$(awk '/^VmHWM/ { print $2 }' "/proc/$mem_pid/status")
wait "$wrk_pid" || true
echo "rss_idle_kb=$rss_idle rss_max_kb=$rss_max hwm_kb=$hwm active_at_max=$active_at_max streams=$memory_streams" \
    > "$tmp/memory.txt"

echo "loadavg_end=$(cut -d' ' -f1 /proc/loadavg)" >> "$tmp/run.txt"
python3 "$here/summary.py" "$tmp"
