#!/usr/bin/env bash
# The gateway's L2 cache read: GET of a 2 KB value through net::RedisClient over loopback
# against a real redis-server (one connection; c=1 for latency, 16 coroutines pipelined on it
# for rate), then redis-benchmark's own GET on the same server as the peer: -c 1, -c 16 (16
# connections) and -c 1 -P 16 (16 pipelined on one connection, like the client's c=16).
# Clients on CPU 0, redis-server on CPU 1 (PIN=0: no pinning). bench/README.md ("Redis L2").
#   bench/redis/run.sh [REQUESTS]      default 100000 per row
#   REDIS_BENCH=path                   another redis_bench binary
set -euo pipefail
cd "$(dirname "$0")/../.."
. bench/lib.sh
requests=${1:-100000}
bin=${REDIS_BENCH:-build/release/bench/redis/redis_bench}
[ -x "$bin" ] || { echo "$bin missing: cmake --build --preset release --target redis_bench" >&2; exit 1; }
command -v redis-server >/dev/null || { echo "redis-server missing: scripts/install-deps.sh" >&2; exit 1; }
client_pin=(taskset -c 0)
server_pin=(taskset -c 1)
if [ "${PIN:-1}" = 0 ]; then client_pin=(); server_pin=(); fi

port=$(free_port)
log=$(mktemp /tmp/tokenradar-redisbench.XXXXXX)
pids=()
trap 'stop_children; rm -f "$log"' EXIT
"${server_pin[@]}" redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
    --daemonize no --logfile '' >"$log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
redis-cli -p "$port" ping >/dev/null || { echo "redis-server did not start: $(tail -3 "$log")" >&2; exit 1; }

echo "requests=$requests, value 2048 B, loadavg $(cut -d' ' -f1-3 /proc/loadavg), $(redis-server --version | cut -d' ' -f3)"
"${client_pin[@]}" "$bin" --url "redis://127.0.0.1:$port" --requests "$requests" \
    --value-bytes 2048 --concurrency 1 --concurrency 16
# redis-benchmark: SET writes key:__rand_int__ with -d bytes, GET reads it back (a hit).
echo '"peer","test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"'
for args in "-c 1" "-c 16" "-c 1 -P 16"; do
    # shellcheck disable=SC2086
    "${client_pin[@]}" redis-benchmark -h 127.0.0.1 -p "$port" -t set,get -n "$requests" -d 2048 \
        $args --csv | grep '^"GET"' | sed "s/^/\"redis-benchmark $args\",/"
done
