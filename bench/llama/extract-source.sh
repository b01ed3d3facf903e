#!/usr/bin/env bash
# extract-source.sh GIT_DIR DEST [COMMIT]: writes llama.cpp's source tree at COMMIT (default
# HEAD) from a bare git directory (the `fetch` tool's mirror of ggerganov/llama.cpp) into DEST.
# A plain `git archive` stops at the first blob the mirror does not hold (a few large vocab
# files and a submodule); those paths are left out, none of them is needed for llama-server
# or for make-tiny-model.py. DEST must be outside this repository: fetched code is never
# committed here. (git may still print "invalid object" for a left-out path; it exits 0.)
set -euo pipefail
git_dir=${1:?usage: extract-source.sh GIT_DIR DEST [COMMIT]}
dest=${2:?usage: extract-source.sh GIT_DIR DEST [COMMIT]}
commit=${3:-HEAD}
git() { command git --git-dir="$git_dir" "$@"; }

missing=$(git ls-tree -r "$commit" | awk '{ print $3 }' | git cat-file --batch-check | awk '$2 == "missing" { print $1 }')
exclude=()
if [[ -n "$missing" ]]; then
    while read -r _ _ hash path; do
        grep -qxF "$hash" <<<"$missing" && exclude+=(":(exclude)$path")
    done < <(git ls-tree -r "$commit")
    echo "leaving out ${#exclude[@]} path(s) the mirror does not hold: ${exclude[*]#:(exclude)}" >&2
fi
mkdir -p "$dest"
git archive "$commit" -- . "${exclude[@]}" | tar -x -C "$dest"
echo "llama.cpp $(git rev-parse --short "$commit") in $dest" >&2
