#!/usr/bin/env bash
# The training run of the profile-guided build (make build-pgo): runs BINARY, built with
# -fprofile-generate, as the product runs: an instant sim, the gateway in front of it with
# the store on, OpenAI requests passed through (small, streamed, at concurrency 64 and 1),
# OpenAI-shaped requests for models on Anthropic and Gemini upstreams translated, /metrics and
# /v1/models read, `tokenradar bench` through the gateway; then stops both with SIGTERM so
# they write their profiles at exit (about 30 s). PROFILE_DIR is the directory BINARY was
# built to write them to (TOKENRADAR_PGO_DIR); it is emptied first and must hold profiles
# after, or the optimised build would quietly come out without them.
#   scripts/pgo-train.sh BINARY PROFILE_DIR
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
[ $# -eq 2 ] || { echo "usage: $0 BINARY PROFILE_DIR" >&2; exit 2; }
binary=$1 profile_dir=$2
command -v wrk >/dev/null || { echo "wrk missing: scripts/install-deps.sh" >&2; exit 1; }
rm -rf "$profile_dir"
tmp=$(mktemp -d /tmp/tokenradar-pgo-train.XXXXXX)
pids=()
cleanup() {
    stop_children
    rm -rf "$tmp"
}
trap cleanup EXIT
export TOKENRADAR_TRAIN_KEY=sk-train
ulimit -n "$(ulimit -Hn)"

start_sim_server "$binary" instant "$tmp/sim.log" || exit 1
gateway_port=$(free_port)
fill scripts/pgo-train.toml "$tmp/gateway.toml" PORT="$gateway_port" UPSTREAM_PORT="$sim_port" \
    STORE="$tmp/train.db"
"$binary" --log-level warn serve --config "$tmp/gateway.toml" >"$tmp/gateway.log" 2>&1 &
gateway_pid=$!
pids+=($gateway_pid)
wait_ready "http://127.0.0.1:$gateway_port/healthz" || { echo "the gateway did not start" >&2; exit 1; }
url="http://127.0.0.1:$gateway_port/v1/chat/completions"

# load CONNECTIONS SECONDS SCRIPT [MODEL]: wrk through the gateway with a benchmark's request
# script (bench/client/nonstream.lua, bench/sim/stream.lua); fails on errors or non-2xx.
load() {
    MODEL="${4:-gpt-4o}" MAX_TOKENS=40 REQUEST_SCRIPT="$3" wrk -t1 -c"$1" -d"$2s" --timeout 10s \
        -s bench/gateway/wrk.lua "$url" >"$tmp/wrk.txt"
    grep -q ' errors=0 non2xx=0' "$tmp/wrk.txt" ||
        { echo "training load failed: $(grep RESULT "$tmp/wrk.txt")" >&2; exit 1; }
}

load 64 8 bench/client/nonstream.lua
load 64 5 bench/sim/stream.lua
load 1 3 bench/client/nonstream.lua
for model in claude-3-5-sonnet gemini-1.5-pro; do
    load 16 3 bench/client/nonstream.lua "$model"
    load 16 3 bench/sim/stream.lua "$model"
done
curl -sf -o /dev/null "http://127.0.0.1:$gateway_port/metrics"
curl -sf -o /dev/null "http://127.0.0.1:$gateway_port/v1/models"
"$binary" --log-level warn bench --target "gateway=openai:http://127.0.0.1:$gateway_port/v1#gpt-4o" \
    --key-env gateway=TOKENRADAR_TRAIN_KEY --workload bench/gateway/stream.toml --concurrency 4 \
    --duration 3s --format json >/dev/null

# stop PID NAME: SIGTERM, then up to 30 s for a clean exit, which is when it writes its profile.
stop() {
    local pid=$1 name=$2 status=0
    kill -TERM "$pid"
    for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
        kill -KILL "$pid"
        wait "$pid" 2>/dev/null || true
        echo "the $name did not stop within 30 s of SIGTERM" >&2
        return 1
    fi
    wait "$pid" || status=$?
    [ "$status" -eq 0 ] || { echo "the $name exited with status $status" >&2; return 1; }
}
pids=()  # from here on stop() reaps them
stop "$gateway_pid" gateway
stop "$sim_pid" sim
profiles=$({ find "$profile_dir" -name '*.gcda' 2>/dev/null || true; } | wc -l)
[ "$profiles" -gt 0 ] || { echo "no profiles in $profile_dir: was $binary built by make build-pgo?" >&2; exit 1; }
echo "pgo training: $profiles profiles in $profile_dir"
