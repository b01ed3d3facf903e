#!/usr/bin/env python3
"""Include directions: every arrow between components is one its README allows.

    scripts/check_includes.py [--root DIR]
    scripts/check_includes.py --self-test

A component is a folder src/<name>/ (and its public headers, include/tokenradar/<name>/).
Its README.md says what it may use in a sentence that starts with "May use:" (a README may
have several, e.g. one per library; their union counts). The sentence runs to the first
period followed by a space or the end of the paragraph; text in parentheses is a comment;
the words that name a component (`core`, `tokenradar::core`, or one of its libraries such
as `net_base`, `sim_model`, `observatory_http`) are the allowed arrows, other words (Boost,
fmt, "the standard library") are ignored here. Arrows are read from

  - `#include <tokenradar/X/...>` and `#include "..."` resolving into another component,
    in src/<name>/ and include/tokenradar/<name>/;
  - `tokenradar::X` in src/<name>/CMakeLists.txt (what the library links).

Exit status 1 with one line per forbidden arrow (file:line: A -> B, and what A's README
allows); 0 when every arrow is allowed. `--self-test` checks that a forbidden include and a
forbidden link in a made-up tree are reported (ctest runs both).
"""

import argparse
import re
import sys
import tempfile
from pathlib import Path

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
LINK = re.compile(r"\btokenradar::(\w+)")
SOURCE_SUFFIXES = {".cpp", ".hpp", ".h", ".cc", ".ipp"}


def components(root):
    return sorted(p.name for p in (root / "src").iterdir() if p.is_dir())


def component_of_word(word, names):
    """The component a README word or CMake target names (net_base -> net), or None."""
    word = word.removeprefix("tokenradar::")
    for name in names:
        if word == name or word.startswith(name + "_"):
            return name
    return None


def may_use(readme, names):
    """The components a README's "May use:" sentences name, or None without one."""
    if not readme.is_file():
        return None
    text = readme.read_text(encoding="utf-8")
    allowed = set()
    found = False
    for match in re.finditer(r"May use:", text):
        found = True
        rest = text[match.end():]
        rest = re.split(r"\n\s*\n", rest, maxsplit=1)[0]  # the paragraph
        previous = None
        while previous != rest:  # comments in parentheses, innermost first
            previous = rest
            rest = re.sub(r"\([^()]*\)", "", rest)
        rest = re.split(r"\.(?:\s|$)", rest, maxsplit=1)[0]  # the sentence
        for word in re.findall(r"[A-Za-z_:]+", rest.replace("`", "")):
            name = component_of_word(word, names)
            if name is not None:
                allowed.add(name)
    return allowed if found else None


def include_arrows(root, name, names):
    """(file, line number, target component, what) for each include of another component."""
    dirs = [root / "src" / name, root / "include" / "tokenradar" / name]
    for folder in dirs:
        if not folder.is_dir():
            continue
        for path in sorted(folder.rglob("*")):
            if path.suffix not in SOURCE_SUFFIXES or not path.is_file():
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                bracket, target = m.groups()
                other = None
                if target.startswith("tokenradar/"):
                    other = target.split("/")[1] if target.count("/") >= 2 else None
                elif bracket == '"':
                    resolved = (path.parent / target).resolve()
                    try:
                        parts = resolved.relative_to((root / "src").resolve()).parts
                        other = parts[0] if len(parts) > 1 else None
                    except ValueError:
                        try:
                            parts = resolved.relative_to(
                                (root / "include" / "tokenradar").resolve()).parts
                            other = parts[0] if len(parts) > 1 else None
                        except ValueError:
                            other = None
                if other is not None and other in names and other != name:
                    yield path, number, other, target


def link_arrows(root, name, names):
    """(file, line number, target component, what) for each tokenradar:: target linked."""
    cmake = root / "src" / name / "CMakeLists.txt"
    if not cmake.is_file():
        return
    for number, line in enumerate(cmake.read_text(encoding="utf-8").splitlines(), 1):
        code = line.split("#", 1)[0]
        for target in LINK.findall(code):
            other = component_of_word(target, names)
            if other is not None and other != name:
                yield cmake, number, other, "tokenradar::" + target


def check(root):
    root = root.resolve()
    names = components(root)
    problems = []
    for name in names:
        readme = root / "src" / name / "README.md"
        allowed = may_use(readme, names)
        if allowed is None:
            problems.append(f"src/{name}/README.md: no \"May use:\" line (what may {name} use?)")
            continue
        arrows = list(include_arrows(root, name, names)) + list(link_arrows(root, name, names))
        for path, number, other, what in arrows:
            if other in allowed:
                continue
            listed = ", ".join(sorted(allowed)) or "no other component"
            problems.append(
                f"{path.relative_to(root)}:{number}: {name} -> {other} ({what}): "
                f"src/{name}/README.md's \"May use:\" allows {listed}")
    return problems


def self_test():
    """A made-up tree with one forbidden include and one forbidden link must fail, naming them."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for name, readme in {
            "core": "# core\n\nMay use: fmt. Nothing else in the project.\n",
            "net": "# net\n\nMay use: `core`, Boost (Asio, a gateway-like thing). Not dialect.\n",
            "gateway": "# gateway\n\nMay use: core, net_base (API keys,\nonly). Not store.\n",
            "store": "# store\n\nMay use: core.\n",
        }.items():
            (root / "src" / name).mkdir(parents=True)
            (root / "include" / "tokenradar" / name).mkdir(parents=True)
            (root / "src" / name / "README.md").write_text(readme)
        (root / "src" / "gateway" / "gateway.cpp").write_text(
            "#include <tokenradar/gateway/gateway.hpp>\n"
            "#include <tokenradar/net/url.hpp>\n"
            "#include <tokenradar/core/error.hpp>\n"
            "#include <tokenradar/store/batch_writer.hpp>\n")
        (root / "include" / "tokenradar" / "net" / "url.hpp").write_text(
            '#include "../core/error.hpp"\n#include "../store/x.hpp"\n')
        (root / "src" / "gateway" / "CMakeLists.txt").write_text(
            "target_link_libraries(tokenradar_gateway\n"
            "    PUBLIC tokenradar::core tokenradar::net tokenradar::options\n"
            "    PRIVATE tokenradar::store_sqlite)  # tokenradar::store in a comment\n")
        problems = check(root)
        expected = [
            "include/tokenradar/net/url.hpp:2: net -> store",
            "src/gateway/gateway.cpp:4: gateway -> store (tokenradar/store/batch_writer.hpp)",
            "src/gateway/CMakeLists.txt:3: gateway -> store (tokenradar::store_sqlite)",
        ]
        ok = len(problems) == len(expected) and all(
            any(p.startswith(e) for p in problems) for e in expected)
        for p in problems:
            print(p)
        if not ok:
            print("self-test FAILED: expected exactly:\n  " + "\n  ".join(expected),
                  file=sys.stderr)
            return 1
        print(f"self-test passed: {len(problems)} forbidden arrows reported as expected")
        return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    problems = check(args.root)
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} include/link arrow(s) the READMEs do not allow", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
