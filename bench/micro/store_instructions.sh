#!/usr/bin/env bash
# Instructions per record of the measurement store's insert (SqliteStore::insert, one
# transaction per batch of 256 gateway-shaped records, as the BatchWriter writes them), under
# valgrind's callgrind: a count that repeats whatever else the machine does. Runs
# BM_SqliteStore_Insert/256/iterations:100 (25,600 records into a new file). For each
# micro_bench binary: the whole insert, and within it SQLite's statement execution
# (sqlite3_step, with BEGIN and COMMIT) and its binds (sqlite3_bind_*); "the rest" is ours
# (packing, label-set lookups). With `schemas`: the same per row shape of
# store_schema_bench.cpp instead (BM_StoreSchema/N/iterations:100, Writer::write per record).
# Keeps the profiles when KEEP=1.
#   bench/micro/store_instructions.sh [MICRO_BENCH...]   (default build/release/bench/micro/micro_bench)
#   bench/micro/store_instructions.sh schemas [MICRO_BENCH]
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v valgrind >/dev/null || { echo "valgrind is not installed (scripts/install-deps.sh)" >&2; exit 1; }
schemas=0
if [ "${1:-}" = schemas ]; then schemas=1; shift; fi
[ $# -ge 1 ] || set -- build/release/bench/micro/micro_bench
batch=256
tmp=$(mktemp -d)
trap '[ "${KEEP:-0}" = 1 ] && echo "profiles kept in $tmp" >&2 || rm -rf "$tmp"' EXIT

if [ "$schemas" = 1 ]; then
    bin=$1
    for design in 0 1 2 3 4 5 6 7; do
        out="$tmp/callgrind.schema$design"
        valgrind --tool=callgrind --callgrind-out-file="$out" "$bin" \
            --benchmark_filter="BM_StoreSchema/$design/iterations:100/" >"$out.txt" 2>/dev/null
        label=$(grep -o 'real_time .*' "$out.txt" | sed 's/.*items_per_second=[^ ]* //')
        callgrind_annotate --tree=caller --inclusive=yes "$out" 2>/dev/null | awk -v d="$design" -v label="$label" '
            / < .*\(([0-9,]+)x\)/ { match($0, /\(([0-9,]+)x\)/); calls = substr($0, RSTART + 1, RLENGTH - 3); gsub(",", "", calls) }
            / \* .*Writer::write\(std::vector.*\) \[/ { gsub(",", "", $1); total = $1; writes = calls }
            / \* .*\?\?\?:sqlite3_step / { gsub(",", "", $1); step = $1 }
            / \* .*\?\?\?:sqlite3_bind_[a-z0-9]+ / { gsub(",", "", $1); bind += $1 }
            END {
                records = writes * 256
                if (records == 0) { print "design " d ": no Writer::write in the profile" > "/dev/stderr"; exit 1 }
                printf "design %s (%s): %.0f per record (sqlite3_step %.0f, sqlite3_bind_* %.0f, the rest %.0f)\n",
                    d, label, total / records, step / records, bind / records, (total - step - bind) / records
            }'
    done
    exit 0
fi

for bin in "$@"; do
    out="$tmp/callgrind.$(basename "$bin").$$.$RANDOM"
    valgrind --tool=callgrind --callgrind-out-file="$out" "$bin" \
        --benchmark_filter="BM_SqliteStore_Insert/$batch/iterations:100/" >/dev/null 2>&1
    callgrind_annotate --tree=caller --inclusive=yes "$out" 2>/dev/null | awk -v batch="$batch" -v bin="$bin" '
        # "N < caller (Kx)" lines come before the "N * function" line they call.
        / < .*\(([0-9,]+)x\)/ { match($0, /\(([0-9,]+)x\)/); calls = substr($0, RSTART + 1, RLENGTH - 3); gsub(",", "", calls) }
        / \* .*SqliteStore::insert\(std::span<[^>]*>\) \[/ { gsub(",", "", $1); insert = $1; inserts = calls }
        / \* .*\?\?\?:sqlite3_step / { gsub(",", "", $1); step = $1 }
        / \* .*\?\?\?:sqlite3_bind_[a-z0-9]+ / { gsub(",", "", $1); bind += $1 }
        END {
            records = inserts * batch
            if (records == 0) { print bin ": no SqliteStore::insert in the profile" > "/dev/stderr"; exit 1 }
            printf "%s: %d records, per record: insert %.0f (sqlite3_step %.0f, sqlite3_bind_* %.0f, the rest %.0f)\n",
                bin, records, insert / records, step / records, bind / records, (insert - step - bind) / records
        }'
done
