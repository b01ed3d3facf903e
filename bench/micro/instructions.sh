#!/usr/bin/env bash
# Instructions per call of one function inside one micro_bench benchmark, counted by callgrind:
# a figure this shared VM's load does not move (no hardware counters here for perf stat).
#   bench/micro/instructions.sh 'BM_DoorRequest/0' 'parse_client_request(tokenradar::dialect::ClientApi'
# Prints: <benchmark> calls=<N> instructions/call=<I>. Needs valgrind; ~10 s per benchmark.
set -euo pipefail
[[ $# -eq 2 ]] || { echo "usage: $0 BENCHMARK FUNCTION-SUBSTRING" >&2; exit 2; }
here=$(cd "$(dirname "$0")/../.." && pwd)
binary=${MICRO_BENCH:-$here/build/release/bench/micro/micro_bench}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
valgrind --tool=callgrind --callgrind-out-file="$out" --toggle-collect='*BM_*' \
    "$binary" --benchmark_filter="$1\$" --benchmark_min_time=0.3 >/dev/null 2>&1
python3 - "$out" "$1" "$2" <<'PY'
import re, subprocess, sys
path, bench, fn = sys.argv[1:]
names, calls, inclusive, target = {}, 0, 0, False
for line in open(path):
    m = re.match(r'(c?)fn=\((\d+)\)(?: (.*))?', line)
    if m:
        if m.group(3): names[m.group(2)] = m.group(3)
        target = m.group(1) == 'c' and fn in names.get(m.group(2), '')
    elif line.startswith('calls=') and target:
        calls += int(line.split('=')[1].split()[0])
        target = 'cost'
    elif target == 'cost':
        inclusive += int(line.split()[1])
        target = False
if calls == 0: sys.exit(f'{fn}: not called in {bench}')
print(f'{bench} calls={calls} instructions/call={inclusive // calls}')
PY
