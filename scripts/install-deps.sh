#!/usr/bin/env bash
# Installs the Debian 12 packages TokenRadar needs to build, test and benchmark.
# Idempotent: prints nothing and exits 0 when everything is already present.
set -euo pipefail

packages=(
    # toolchain
    build-essential cmake ninja-build ccache pkg-config git
    clang-14 libclang-rt-14-dev libfuzzer-14-dev clang-format-14 clang-tidy-14 python3
    # libraries
    libboost1.81-dev libboost-json1.81-dev libboost-url1.81-dev
    libssl-dev ca-certificates libsqlite3-dev libpq-dev zlib1g-dev
    libfmt-dev libspdlog-dev libcli11-dev libtomlplusplus-dev libcctz-dev tzdata
    libmaxminddb-dev libmimalloc-dev
    # the response cache: ANN index (semantic tier), Redis reply reader (shared tier), fast hash
    libhnswlib-dev libhiredis-dev libxxhash-dev
    # tests and benchmarks
    libgtest-dev libgmock-dev libbenchmark-dev openssl wrk curl valgrind
    # the shared cache tier's tests start a real Redis on a free loopback port
    redis-server
    # the PostgreSQL store's tests and benchmark initdb their own server (as the postgres
    # user the package creates) on a free loopback port
    postgresql-15
    # the ClickHouse store's tests and benchmark start their own clickhouse-server 18.16 (its
    # own config XML, free loopback ports); clickhouse-client for looking at the data by hand
    clickhouse-server clickhouse-client
    # the several-nodes test puts nginx in front of three serve nodes
    nginx-light
    # the dashboard's browser tests (web/tests/run.mjs drives it through playwright-core)
    chromium
)

missing=()
for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
        missing+=("$p")
    fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps: need root to install: ${missing[*]}" >&2
    exit 1
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
