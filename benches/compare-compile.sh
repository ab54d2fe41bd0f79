#!/usr/bin/env bash
# Compares `cargo bench --bench compile` of the work tree with a base revision, in one script, so
# both run on the same machine in the same state: `bash benches/compare-compile.sh <base-ref> [runs] [tenants]`.
#
# The base is checked out into a temporary worktree (left alone afterwards only if building
# fails). The two binaries run alternately `runs` times (default 5), and the script prints the
# best full-compile time and time per output MB of each, and their ratios (head / base).
# The fleets may differ in output size when the compiler emits more objects per tenant, so the
# per-MB ratio is the comparable one for speed; the full-compile ratio says what a user waits.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
base_ref=${1:?usage: benches/compare-compile.sh <base-ref> [runs] [tenants]}
runs=${2:-5}
tenants=${3:-2000}

bench_binary() { # print the compile bench executable that `cargo bench --no-run` built in $1
    (cd "$1" && cargo bench --locked --bench compile --no-run --message-format=json 2>/dev/null) |
        python3 -c 'import json,sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "compile" and m.get("executable"):
        print(m["executable"])'
}

base_dir=$(mktemp -d "${TMPDIR:-/tmp}/tenantc-base.XXXXXX")
git worktree add --quiet --detach "$base_dir" "$base_ref"
trap 'git worktree remove --force "$base_dir"' EXIT
# The base shares the work tree's build cache for dependencies, by copying it when present.
if [ -d target/release ] && [ ! -e "$base_dir/target" ]; then
    mkdir -p "$base_dir/target" && cp -a target/release "$base_dir/target/"
fi
head_bin=$(bench_binary .)
base_bin=$(bench_binary "$base_dir")
[ -n "$head_bin" ] && [ -n "$base_bin" ] || { echo "building a bench failed" >&2; exit 1; }

results=$(mktemp)
for run in $(seq "$runs"); do
    for side in base head; do
        bin=$base_bin
        [ "$side" = head ] && bin=$head_bin
        "$bin" "$tenants" | awk -v side="$side" '
            /^fleet:/ { files = $(NF-5); bytes = $(NF-2) }
            /^full compile:/ { full = $3 }
            /^per output MB:/ { mb = $4 }
            END { print side, full, mb, files, bytes }' >> "$results"
    done
    echo "run $run of $runs done" >&2
done
awk '
    { if (!($1 in full) || $2 < full[$1]) full[$1] = $2; if (!($1 in mb) || $3 < mb[$1]) mb[$1] = $3; files[$1] = $4; bytes[$1] = $5 }
    END {
        for (side in full) printf "%-5s best full compile %8.1f ms, best per output MB %6.1f ms (%s files, %s bytes)\n", side, full[side], mb[side], files[side], bytes[side]
        printf "head / base: full compile %.2fx, per output MB %.2fx\n", full["head"] / full["base"], mb["head"] / mb["base"]
    }' "$results"
rm -f "$results"
