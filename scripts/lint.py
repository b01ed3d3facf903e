#!/usr/bin/env python3
"""The checks `make test` runs before the suites (conventions.md "Format and lint").

    scripts/lint.py [format|banned|tidy|all] [--build-dir build/release] [--jobs N]

format  clang-format-14 on every tracked .cpp/.hpp; `make format` rewrites them.
banned  APIs the conventions ban, with the reason printed next to each hit.
tidy    clang-tidy-14 (.clang-tidy) on every translation unit under src/, from the build's
        compile_commands.json. A unit that passed is remembered under ~/.cache/tokenradar-tidy,
        keyed by its compile command, its source and every project header it includes (from
        ninja's dependency log), so an unchanged tree re-checks nothing and a changed header
        re-checks exactly the units that include it.

Exit status 1 with one line per finding (file:line: what and why) when a check fails.
"""

import argparse
import concurrent.futures
import hashlib
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLANG_FORMAT = "clang-format-14"
CLANG_TIDY = "clang-tidy-14"


def tracked_sources():
    out = subprocess.run(["git", "ls-files", "*.cpp", "*.hpp"], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    return [f for f in out.split() if "node_modules/" not in f]


def check_format(args):
    files = tracked_sources()
    bad = []
    for start in range(0, len(files), 50):
        batch = files[start:start + 50]
        run = subprocess.run([CLANG_FORMAT, "--style=file", "--dry-run", *batch], cwd=ROOT,
                             capture_output=True, text=True)
        bad += sorted({line.split(":", 1)[0] for line in run.stderr.splitlines()
                       if ": warning:" in line or ": error:" in line})
    for f in bad:
        print(f"{f}: not formatted as .clang-format says (make format rewrites it)")
    print(f"lint format: {len(files)} files, {len(bad)} not formatted")
    return not bad


# (pattern, where it applies, why it is banned). Paths are prefixes relative to the root.
LIBRARY = ("src/", "include/")
BANNED = [
    (re.compile(r"\bdetached\b"), ("src/", "include/", "tests/", "bench/"),
     "a detached spawn swallows its exception: co_spawn with a handler that logs it"),
    (re.compile(r"\.detach\(\)"), ("src/", "include/", "tests/", "bench/"),
     "a detached thread outlives its owner: join it"),
    (re.compile(r"\b(s?rand)\("), ("src/", "include/", "tests/", "bench/"),
     "rand() is global, slow and poor: use <random> with an explicit engine"),
    (re.compile(r"std::(cout|cerr|clog)\b|\b(printf|puts|fputs|fprintf)\(|fmt::print\("),
     LIBRARY, "library code does not print: log through spdlog or take an output stream"),
]
# The command line and the tools print by design.
PRINT_ALLOWED = ("src/app/",)


def check_banned(args):
    hits = 0
    for f in tracked_sources():
        text = (ROOT / f).read_text(encoding="utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), 1):
            code = line.split("//", 1)[0]
            for pattern, where, why in BANNED:
                if not f.startswith(where) or not pattern.search(code):
                    continue
                if where is LIBRARY and f.startswith(PRINT_ALLOWED):
                    continue
                print(f"{f}:{number}: banned `{pattern.search(code).group(0)}`: {why}")
                hits += 1
    print(f"lint banned: {hits} uses of banned APIs")
    return hits == 0


def ninja_deps(build_dir):
    """Object path (relative to the build dir) -> the project headers it includes."""
    out = subprocess.run(["ninja", "-C", str(build_dir), "-t", "deps"], capture_output=True,
                         text=True, check=True).stdout
    deps, current = {}, None
    for line in out.splitlines():
        if line and not line[0].isspace():
            current = line.split(":", 1)[0]
            deps[current] = []
        elif current and line.strip():
            path = line.strip()
            if path.startswith(str(ROOT)) and path.endswith((".hpp", ".h")):
                deps[current].append(path)
    return deps


def digest_file(path, memo):
    if path not in memo:
        try:
            memo[path] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
        except OSError:
            memo[path] = "missing"
    return memo[path]


def check_tidy(args):
    build_dir = (ROOT / args.build_dir).resolve()
    commands_path = build_dir / "compile_commands.json"
    if not commands_path.exists():
        print(f"lint tidy: {commands_path} is missing: build first (make build)")
        return False
    units = [u for u in json.loads(commands_path.read_text())
             if Path(u["file"]).resolve().is_relative_to(ROOT / "src")]
    deps = ninja_deps(build_dir)
    version = subprocess.run([CLANG_TIDY, "--version"], capture_output=True, text=True).stdout
    config = (ROOT / ".clang-tidy").read_bytes()
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "tokenradar-tidy"
    cache.mkdir(parents=True, exist_ok=True)
    memo = {}

    def key_of(unit):
        argv = shlex.split(unit["command"]) if "command" in unit else unit["arguments"]
        obj = argv[argv.index("-o") + 1] if "-o" in argv else ""
        if obj not in deps:
            return None  # not built yet: no dependency list, always check
        # Paths relative to the checkout, so a fresh clone of the same tree hits the cache.
        root = str(ROOT) + "/"
        h = hashlib.sha256(version.encode() + config + unit["command"].replace(root, "").encode())
        for path in [unit["file"], *sorted(deps[obj])]:
            h.update(path.replace(root, "").encode() + digest_file(path, memo).encode())
        return h.hexdigest()

    todo = []
    for unit in units:
        key = key_of(unit)
        if key is None or not (cache / key).exists():
            todo.append((unit, key))

    def tidy(item):
        unit, key = item
        run = subprocess.run([CLANG_TIDY, "--quiet", "-p", str(build_dir), unit["file"]],
                             capture_output=True, text=True)
        findings = [line for line in run.stdout.splitlines()
                    if re.search(r": (warning|error):", line)]
        if run.returncode == 0 and not findings and key:
            (cache / key).touch()
        return unit["file"], run.returncode, findings, run.stderr

    failed = set()
    seen = set()
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for file, code, findings, stderr in pool.map(tidy, todo):
            for line in findings:
                if line not in seen:
                    seen.add(line)
                    print(line.replace(str(ROOT) + "/", ""))
            if code != 0 or findings:
                failed.add(file)
                if code != 0 and not findings:
                    print(f"{file}: clang-tidy failed:\n{stderr[-2000:]}")
    print(f"lint tidy: {len(units)} units, {len(todo)} checked, {len(failed)} with findings")
    return not failed


CHECKS = {"format": check_format, "banned": check_banned, "tidy": check_tidy}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("check", nargs="?", default="all", choices=[*CHECKS, "all"])
    parser.add_argument("--build-dir", default="build/release")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args()
    names = list(CHECKS) if args.check == "all" else [args.check]
    ok = [CHECKS[name](args) for name in names]
    return 0 if all(ok) else 1


if __name__ == "__main__":
    sys.exit(main())
