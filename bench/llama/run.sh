#!/usr/bin/env bash
# bench and serve against llama.cpp's llama-server (issue 24): a real OpenAI-compatible
# server that closes the connection after each streamed response. Starts llama-server (one
# thread, two slots) on the tiny model, then runs `tokenradar bench` directly against it and
# through `tokenradar serve` (bench/llama/gateway.toml), chat workload streamed and not, at
# concurrency 1 and 2, with --extra-body '{"ignore_eos": true}' so every answer has exactly
# max_tokens tokens. Prints one line per run: requests, errors and their statuses, output
# tokens, TTFT and decode speed.
#   LLAMA_SERVER=/work/llama-build/bin/llama-server MODEL=/work/llama-model/tiny.gguf \
#       bench/llama/run.sh [REQUESTS]     (default 100 per run)
#   TOKENS=64                             max_tokens of workloads/chat.toml (default its 300;
#                                         a shorter answer keeps a run short on a busy machine)
#   CONCURRENCY="1 2" ROUTES="direct gateway" STREAMS="stream nonstream"   choose the runs
#   TOKENRADAR=path                       measure another tokenradar binary
#   KEEP=1                                keep the work directory (logs, summaries)
set -euo pipefail
cd "$(dirname "$0")/../.."
. bench/lib.sh
requests=${1:-100}
bin=${TOKENRADAR:-build/release/tokenradar}
llama=${LLAMA_SERVER:?set LLAMA_SERVER to the llama-server binary (bench/llama/build-llama-server.sh)}
model=${MODEL:?set MODEL to the .gguf (bench/llama/make-tiny-model.py)}
[ -x "$bin" ] || { echo "$bin missing: make build, or set TOKENRADAR=path" >&2; exit 1; }

tmp=$(mktemp -d /tmp/tokenradar-llama.XXXXXX)
pids=()
cleanup() {
    stop_children
    if [ -n "${KEEP:-}" ]; then echo "kept $tmp" >&2; else rm -rf "$tmp"; fi
}
trap cleanup EXIT

# workloads/chat.toml (its prompts) streamed and not, with TOKENS-token answers.
for stream in true false; do
    sed -e "s/^stream = .*/stream = $stream/" -e "s/^max_tokens = .*/max_tokens = ${TOKENS:-300}/" \
        workloads/chat.toml > "$tmp/chat-stream-$stream.toml"
done

llama_port=$(free_port)
"$llama" -m "$model" --host 127.0.0.1 --port "$llama_port" -t 1 -c 2048 -np 2 --alias tiny \
    >"$tmp/llama-server.log" 2>&1 &
pids+=($!)
wait_ready "http://127.0.0.1:$llama_port/health" 300 || { tail -5 "$tmp/llama-server.log" >&2; exit 1; }

gw_port=$(free_port)
fill bench/llama/gateway.toml "$tmp/gateway.toml" PORT="$gw_port" UPSTREAM_PORT="$llama_port" STORE="$tmp/gateway.db"
"$bin" --log-level warn serve --config "$tmp/gateway.toml" >"$tmp/serve.log" 2>&1 &
pids+=($!)
wait_ready "http://127.0.0.1:$gw_port/healthz" || { tail -5 "$tmp/serve.log" >&2; exit 1; }

echo "date=$(date -u +%FT%TZ) requests=$requests max_tokens=${TOKENS:-300} llama_server=$("$llama" --version 2>&1 | head -1) loadavg=$(cut -d' ' -f1 /proc/loadavg)"
for route in ${ROUTES:-direct gateway}; do
    url=http://127.0.0.1:$llama_port/v1
    [ "$route" = gateway ] && url=http://127.0.0.1:$gw_port/v1
    for stream in ${STREAMS:-stream nonstream}; do
        workload=$tmp/chat-stream-true.toml
        [ "$stream" = nonstream ] && workload=$tmp/chat-stream-false.toml
        for c in ${CONCURRENCY:-1 2}; do
            out="$tmp/$route-$stream-c$c"
            "$bin" bench --target "llama=openai:$url#tiny" --workload "$workload" --requests "$requests" \
                --concurrency "$c" --extra-body '{"ignore_eos": true}' --out "$out" >"$out.table" 2>"$out.err" || true
            python3 - "$route" "$stream" "$c" "$out" <<'PY'
import json, sys
route, stream, c, out = sys.argv[1:]
try:
    t = json.load(open(out + ".summary.json"))["targets"][0]
except (OSError, ValueError, IndexError, KeyError):
    print(f"{route:8} {stream:9} c={c}  no summary: {open(out + '.err').read().strip()[:300]}")
    sys.exit(0)
recs = [json.loads(l) for l in open(out + ".jsonl")]
statuses = {}
for r in recs:
    statuses[r["status"]] = statuses.get(r["status"], 0) + 1
tokens = sorted({r.get("output_tokens") for r in recs if r["status"] == "ok"})
def q(key, p="p50"):
    v = t.get(key) or {}
    return f"{v[p]:.1f}" if isinstance(v, dict) and isinstance(v.get(p), (int, float)) else "-"
print(f"{route:8} {stream:9} c={c}  requests {t['requests']}  errors {t['errors']} {statuses}  "
      f"output tokens {tokens}  TTFT p50 {q('ttft_ms')} ms  decode p50 {q('decode_tps')} tok/s  "
      f"E2E p50 {q('e2e_ms')} p95 {q('e2e_ms', 'p95')} ms")
if t["errors"]:
    first = [l.strip() for l in open(out + ".err") if "llama:" in l][:1]
    print(f"    first error: {first[0][:200] if first else '?'}")
PY
        done
    done
done
