# Entry points. `make run` and `make test` install what is missing, build and run.
# Presets live in CMakePresets.json; build trees under build/<preset>.

JOBS ?= $(shell nproc)
export CCACHE_DIR ?= $(HOME)/.cache/ccache
export CCACHE_MAXSIZE ?= 5G
# Paths inside the checkout hash as relative ones, and the build directory's own path is left
# out of the hash (debug info then names the first checkout's path), so a fresh clone reuses
# the cache instead of recompiling everything.
export CCACHE_BASEDIR ?= $(CURDIR)
export CCACHE_NOHASHDIR ?= 1

.PHONY: deps web sdk-deps build build-asan build-pgo test test-release test-asan test-tsan lint run fuzz bench format clean

deps:
	@scripts/install-deps.sh

build/%/build.ninja: CMakeLists.txt CMakePresets.json
	cmake --preset $* >/dev/null

# The dashboard (web/, served by `tokenradar serve` at /): `npm ci` only when the lock file
# changed, `vite build` only when a source changed. Node 20 and npm come with the machine.
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD := 1
WEB_SOURCES := $(shell find web/src -type f 2>/dev/null) web/index.html web/package.json \
	web/package-lock.json web/vite.config.ts web/tsconfig.json

web/node_modules/.package-lock.json: web/package-lock.json
	cd web && npm ci --no-audit --no-fund
	@touch $@

web/dist/index.html: web/node_modules/.package-lock.json $(WEB_SOURCES)
	cd web && npm run build
	@touch $@

web: web/dist/index.html

# The SDK tests' npm packages (tests/sdk: the official openai and @anthropic-ai/sdk), same rule.
tests/sdk/node_modules/.package-lock.json: tests/sdk/package-lock.json
	cd tests/sdk && npm ci --no-audit --no-fund
	@touch $@

sdk-deps: tests/sdk/node_modules/.package-lock.json

build: deps web sdk-deps build/release/build.ninja
	cmake --build --preset release -j $(JOBS)

build-asan: deps build/asan/build.ninja
	cmake --build --preset asan -j $(JOBS)

# The PGO binary, build/pgo/tokenradar (bench/README.md "Profile-guided build": 3-8% less CPU
# per proxied request): an instrumented build, a training run of it (scripts/pgo-train.sh,
# ~30 s) writing build/pgo-profile (the presets' TOKENRADAR_PGO_DIR), then the optimised
# build from that profile, rebuilt whole since ninja cannot see a new profile. Without
# ccache: it caches no compile with these profile flags.
build-pgo: deps web build/pgo-generate/build.ninja build/pgo/build.ninja
	cmake --build --preset pgo-generate -j $(JOBS) --target tokenradar
	scripts/pgo-train.sh build/pgo-generate/tokenradar build/pgo-profile
	cmake --build --preset pgo -j $(JOBS) --target tokenradar --clean-first

# Every test: format, banned APIs, include directions and clang-tidy (scripts/lint.py), the
# full suite on the optimised build (timing tests need it), then every test but the
# timing-sensitive ones under ASan+UBSan.
test: build build-asan
	scripts/lint.py all
	ctest --preset release -j $(JOBS)
	ctest --preset asan -j $(JOBS)

# The checks alone (conventions.md "Format and lint"); tidy reads build/release's compile
# commands and re-checks only the units whose source or project headers changed.
lint: build
	scripts/lint.py all

test-release: build
	ctest --preset release -j $(JOBS)

test-asan: build-asan
	ctest --preset asan -j $(JOBS)

# The threaded suites under ThreadSanitizer: servers, clients and the relay (net, gateway),
# the store's writer and checkpointer threads (store), the observatory forwarder
# (observatory_submit). Any race fails the run (exit code 66), a suite past 15 minutes too.
# Not in `make test`, which keeps one sanitizer build: run it after changing threads,
# executors or shared state.
TSAN_SUITES := tests/integration/net/net_integration_test \
	tests/integration/gateway/gateway_integration_test \
	tests/integration/gateway/observatory_submit_test \
	tests/integration/gateway/observatory_http_test tests/unit/store/store_test
test-tsan: deps build/tsan/build.ninja
	cmake --build --preset tsan -j $(JOBS) --target $(notdir $(TSAN_SUITES))
	set -e; for suite in $(TSAN_SUITES); do timeout 900 build/tsan/$$suite; done

# The dashboard, live: four sims, a gateway, a week of history and steady traffic (README
# "tokenradar demo"). Options through DEMO_ARGS, e.g. make run DEMO_ARGS="--port 9000 --history 2d".
DEMO_ARGS ?=
run: build
	build/release/tokenradar demo $(DEMO_ARGS)

# Coverage-guided fuzzing with clang's libFuzzer: make fuzz FUZZER=sse_parser SECONDS=60
FUZZER ?= sse_parser
SECONDS ?= 60
fuzz: deps build/fuzz/build.ninja
	cmake --build --preset fuzz -j $(JOBS) --target fuzz_$(FUZZER)
	mkdir -p build/fuzz/corpus/$(FUZZER)
	build/fuzz/tests/fuzz/fuzz_$(FUZZER) -max_total_time=$(SECONDS) \
		build/fuzz/corpus/$(FUZZER) tests/fuzz/corpus/$(FUZZER)

format:
	git ls-files '*.cpp' '*.hpp' | grep -v node_modules/ | xargs clang-format-14 -i --style=file

clean:
	rm -rf build
