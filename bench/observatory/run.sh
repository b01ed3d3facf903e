#!/usr/bin/env bash
# Observatory ingestion end to end (target >= 100,000 records/s into SQLite): a real
# `tokenradar serve` (tokenradar.toml: public ingestion, the store in a fresh directory) and
# `observatory_bench post` sending REQUESTS NDJSON bodies of 10,000 fresh records over
# CONNECTIONS keep-alive connections, plain and then gzip'd, each to a new server and store.
# Prints the client's report (records accepted per second, the server's CPU over the run)
# and the store's count afterwards (sqlite3).
#   bench/observatory/run.sh [REQUESTS]      default 30 (300,000 records per run)
#   CONNECTIONS=4 SPREAD=1 (hours of ts) KEEP=1 (keep the work directory)
#   IDS=random   random request ids (other clients) instead of time-ordered ones (tokenradar's own)
#   TOKENRADAR=path OBSBENCH=path            other binaries
#   LOG_LEVEL=debug                          the server's log level (with KEEP=1, read its log)
set -euo pipefail
cd "$(dirname "$0")/../.."
. bench/lib.sh
requests=${1:-30}
connections=${CONNECTIONS:-4}
spread=${SPREAD:-1}
bin=${TOKENRADAR:-build/release/tokenradar}
client=${OBSBENCH:-build/release/bench/observatory/observatory_bench}
[ -x "$bin" ] || { echo "$bin missing: make build, or set TOKENRADAR=path" >&2; exit 1; }
[ -x "$client" ] || { echo "$client missing: cmake --build --preset release --target observatory_bench" >&2; exit 1; }
command -v sqlite3 >/dev/null || { echo "sqlite3 missing (it counts the stored records)" >&2; exit 1; }

tmp=$(mktemp -d /tmp/tokenradar-obsbench.XXXXXX)
server=""
cleanup() {
    if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
    if [ -n "${KEEP:-}" ]; then echo "kept $tmp" >&2; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "requests=$requests x 10000 records, connections=$connections, spread=${spread}h, ids=${IDS:-time}, loadavg $(cut -d' ' -f1-3 /proc/loadavg)"
for mode in plain gzip; do
    port=$(free_port)
    store="$tmp/$mode.db"
    fill bench/observatory/tokenradar.toml "$tmp/$mode.toml" PORT="$port" STORE="$store"
    "$bin" --log-level "${LOG_LEVEL:-warn}" serve --config "$tmp/$mode.toml" > "$tmp/$mode.log" 2>&1 &
    server=$!
    wait_ready "http://127.0.0.1:$port/readyz" 100 || { cat "$tmp/$mode.log" >&2; exit 1; }
    flags=()
    [ "$mode" = gzip ] && flags+=(--gzip)
    [ "${IDS:-time}" = time ] && flags+=(--time-ordered-ids)
    echo "== $mode (loadavg $(cut -d' ' -f1 /proc/loadavg))"
    "$client" post --url "http://127.0.0.1:$port/api/v1/measurements" --requests "$requests" \
        --connections "$connections" --spread "$spread" --server-pid "$server" "${flags[@]}"
    kill -TERM "$server"
    wait "$server" || true
    server=""
    echo "store: $(sqlite3 "$store" 'SELECT count(*) FROM measurements') records in $store"
done
