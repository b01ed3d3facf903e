# shellcheck shell=bash
# Shell helpers shared by the benchmark scripts (bench/*/run.sh source this file).

# A free TCP port on 127.0.0.1 (the kernel's choice; a tiny race before the server binds it).
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# wait_ready URL [TRIES]: polls URL every 0.1 s until it answers 2xx; false after TRIES polls
# (default 50 = 5 s). Any method works for a health check: a GET.
wait_ready() {
    local tries=${2:-50}
    for _ in $(seq "$tries"); do curl -sf -o /dev/null "$1" && return 0; sleep 0.1; done
    return 1
}

# cpu_ticks PID...: user + system CPU of the processes so far, in clock ticks (1/100 s;
# /proc/PID/stat fields 14+15).
cpu_ticks() {
    local pid sum=0
    for pid in "$@"; do sum=$((sum + $(awk '{ print $14 + $15 }' "/proc/$pid/stat"))); done
    echo "$sum"
}

# per_request TICKS REQUESTS: microseconds of CPU per request, one decimal (a tick is 10 ms).
per_request() { awk -v t="$1" -v n="$2" 'BEGIN { printf "%.1f", t * 10000 / n }'; }

# wrk_measure NAME MODE CONNECTIONS SECONDS URL PID UPSTREAM_PID [PREFIX...]: one `wrk -t1` run
# behind PREFIX (e.g. taskset -c 0) of bench's requests against URL: MODE stream sends
# bench/sim/stream.lua's (100 tokens asked), any other bench/client/nonstream.lua's. Prints one
# line: requests/s, PID's CPU per request (user + system, and each), UPSTREAM_PID's, and wrk's
# exact p50/p99 (errors when there were any). The raw output is in $tmp/wrk.txt (work_dir).
# Fails when no request completed.
wrk_measure() {
    local name=$1 mode=$2 c=$3 s=$4 url=$5 pid=$6 upstream=$7 script=bench/client/nonstream.lua
    local env=() before after up_before up_after req dur errors
    shift 7
    if [ "$mode" = stream ]; then script=bench/sim/stream.lua env=(MAX_TOKENS=100); fi
    read -ra before < <(awk '{ print $14, $15 }' "/proc/$pid/stat")
    up_before=$(cpu_ticks "$upstream")
    env REQUEST_SCRIPT="$script" "${env[@]}" "$@" wrk -t1 -c"$c" -d"${s}s" --timeout 10s \
        -s bench/gateway/wrk.lua "$url" >"$tmp/wrk.txt"
    # The gateway's store writer commits every 200 ms: its last batch belongs to this run.
    sleep 0.3
    read -ra after < <(awk '{ print $14, $15 }' "/proc/$pid/stat")
    up_after=$(cpu_ticks "$upstream")
    req=$(grep -o 'requests=[0-9]*' "$tmp/wrk.txt" | cut -d= -f2)
    dur=$(grep -o 'duration_us=[0-9]*' "$tmp/wrk.txt" | cut -d= -f2)
    if [ -z "$req" ] || [ "$req" -eq 0 ]; then
        echo "$name $mode c=$c: no requests completed ($(tail -1 "$tmp/wrk.txt"))" >&2
        return 1
    fi
    errors=$(grep -o 'errors=[0-9]* non2xx=[0-9]*' "$tmp/wrk.txt")
    [ "$errors" = "errors=0 non2xx=0" ] && errors=""
    # The upstream's CPU per request too: it moves with the machine's slow spells, not with
    # the proxy, so a run where it rose was a slow one for every route.
    echo "$name $mode c=$c req/s=$((req * 1000000 / dur))" \
        "cpu_us/req=$(per_request "$((after[0] + after[1] - before[0] - before[1]))" "$req")" \
        "user_us/req=$(per_request "$((after[0] - before[0]))" "$req")" \
        "sys_us/req=$(per_request "$((after[1] - before[1]))" "$req")" \
        "upstream_us/req=$(per_request "$((up_after - up_before))" "$req")" \
        "$(grep -o 'p50_us=[0-9]* p99_us=[0-9]*' "$tmp/wrk.txt")${errors:+ $errors}"
}

# fill TEMPLATE OUT NAME=VALUE...: replaces @NAME@ in a config template.
fill() {
    local template=$1 out=$2 expr=() kv
    shift 2
    for kv in "$@"; do expr+=(-e "s|@${kv%%=*}@|${kv#*=}|g"); done
    sed "${expr[@]}" "$template" > "$out"
}

# need_nginx: installs nginx-light when nginx is missing (only the nginx comparisons need it,
# so it is not in scripts/install-deps.sh; needs root).
need_nginx() {
    command -v nginx >/dev/null && return 0
    echo "installing nginx-light for the nginx comparison" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nginx-light >/dev/null
    # The package starts its default site on port 80 unless policy-rc.d forbids it: stop it.
    if [ -s /run/nginx.pid ]; then nginx -s quit || true; fi
}

# start_nginx DIR CONFIG NAME=VALUE...: an nginx (master + one worker) behind the caller's
# `server` prefix (may be empty), CONFIG filled with the values, its files in DIR; adds the
# master to `pids` and sets nginx_worker, the process whose CPU is nginx's.
start_nginx() {
    local dir=$1 config=$2
    shift 2
    mkdir -p "$dir"
    fill "$config" "$dir/nginx.conf" TMP="$dir" "$@"
    "${server[@]}" nginx -e "$dir/nginx-error.log" -c "$dir/nginx.conf" -g 'daemon off;' &
    pids+=($!)
    # The master forks the worker after reading the config: wait for one.
    for _ in $(seq 50); do nginx_worker=$(pgrep -P "${pids[-1]}" | head -1) && return 0; sleep 0.1; done
    echo "nginx ($dir) did not start: $(tail -3 "$dir/nginx-error.log")" >&2
    return 1
}

# start_sim_server BINARY PROFILE LOG [PREFIX...]: one sim with one I/O thread (so its CPU is
# bounded) on a free port, in the background behind PREFIX (e.g. taskset -c 1), its output in
# LOG. Sets sim_port and sim_pid and adds the PID to the caller's `pids`. Fails, with the
# log's last lines on stderr, when the sim does not answer within 5 s.
start_sim_server() {
    local binary=$1 profile=$2 log=$3
    shift 3
    sim_port=$(free_port)
    "$@" "$binary" --log-level warn sim --profile "$profile" --port "$sim_port" --threads 1 >"$log" 2>&1 &
    sim_pid=$!
    pids+=("$sim_pid")
    wait_ready "http://127.0.0.1:$sim_port/healthz" && return 0
    echo "the sim ($profile) did not start: $(tail -3 "$log")" >&2
    return 1
}

# stop_children: kills and reaps the processes whose PIDs are in the caller's `pids` array;
# the first step of the EXIT trap of every script that starts servers.
stop_children() {
    local pid
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}

# machine_jitter BUILD_DIR: one line saying how late this machine wakes an idle thread right
# now (bench/machine/wake_jitter: 2000 sleeps of 1 ms, ~2.5 s), the floor under the p99s that
# follow; a note instead when the program is not built.
machine_jitter() {
    local probe=$1/bench/machine/wake_jitter
    if [ -x "$probe" ]; then "$probe"; else echo "(no $probe: build target wake_jitter for the machine's wake-up lateness)"; fi
}

# work_dir NAME: a fresh directory /tmp/tokenradar-NAME.XXXXXX in `tmp` and an empty `pids`;
# at exit (and on INT or TERM) the processes in `pids` are stopped and the directory removed,
# or kept and named on stderr with KEEP=1.
work_dir() {
    tmp=$(mktemp -d "/tmp/tokenradar-$1.XXXXXX")
    pids=()
    trap 'stop_children; if [ -n "${KEEP:-}" ] && [ "${KEEP}" != 0 ]; then echo "kept $tmp" >&2; else rm -rf "$tmp"; fi' EXIT
    trap 'exit 130' INT TERM
}

# pin_cpus DEFAULT: the arrays `client` (taskset -c 0) and `server` (taskset -c 1) when PIN
# (DEFAULT when unset) is not 0 and there are two CPUs and taskset; both empty otherwise.
# Latency at concurrency 1 is mostly process wake-ups, whose cost depends on where the
# scheduler puts the processes: unpinned, back-to-back runs flipped between two levels;
# pinned, every route has the same hops and the server side one core. `pinned` says which.
pin_cpus() {
    client=() server=()
    if [ "${PIN:-$1}" != 0 ] && [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then
        client=(taskset -c 0) server=(taskset -c 1)
    fi
}
pinned() { if [ ${#client[@]} -gt 0 ]; then echo yes; else echo no; fi; }
