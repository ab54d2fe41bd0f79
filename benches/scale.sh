#!/usr/bin/env bash
# The scale benchmark of docs/performance.md: seeded generated fleets (benches/fleet/seeded.rs)
# of 250, 500, 1,000 and 2,000 tenants over 20 cells, on a RAM disk, with the release binary.
#
# For each size it reports, as medians of RUNS runs, the wall time of a cold `tenantc build`
# (empty out/), a no-op build, a build after editing one tenant, and `tenantc check`; the peak
# RSS of the cold build and of check (GNU time); the bytes each build wrote (the sizes of the
# files it created or changed); and each as a ratio against baselines measured in the same run:
# `cp -r` of the output tree (cold build), `cat` of every output file (check), the no-op build
# (one-tenant edit) and one thread (cold build and check, `TENANTC_THREADS=1`). Then the render
# step of the GitOps controllers: `kubectl kustomize` over every folder an Argo CD
# ApplicationSet or a Flux Kustomization syncs, once, against one `kubectl kustomize` of a whole
# cell.
#
# Usage: benches/scale.sh [TENANTS...]   (default 250 500 1000 2000)
# Environment: CELLS (20), RUNS (3), SEED (23), SCRATCH (/dev/shm), KUSTOMIZE (the sizes that
# get the kubectl part, "250 2000"; it runs one kubectl per synced folder, minutes at 2,000
# tenants), KUBECTL (kubectl), THREADS (the thread count of the parallel runs; default: the
# cores).
# Needs GNU time at /usr/bin/time (Debian: apt-get install time) and, for the render step,
# kubectl. Prints Markdown tables on stdout; progress on stderr.

set -euo pipefail

CELLS=${CELLS:-20}
RUNS=${RUNS:-3}
SEED=${SEED:-23}
SCRATCH=${SCRATCH:-/dev/shm}
KUSTOMIZE=${KUSTOMIZE-"250 2000"}
KUBECTL=${KUBECTL:-kubectl}
THREADS=${THREADS:-$(nproc)}
SIZES=("$@")
[ ${#SIZES[@]} -gt 0 ] || SIZES=(250 500 1000 2000)

repo=$(cd "$(dirname "$0")/.." && pwd)
[ -x /usr/bin/time ] || { echo "scale.sh: GNU time is missing (apt-get install time)" >&2; exit 2; }
say() { echo "scale.sh: $*" >&2; }

say "building the release binary and the fleet generator"
# The generator is not timed: its dev build saves compiling the dev-dependencies for release.
(cd "$repo" && cargo build --release --locked --quiet --bin tenantc && cargo build --locked --quiet --example fleetgen)
tenantc=$repo/target/release/tenantc
fleetgen=$repo/target/debug/examples/fleetgen
threads_flag=0
if "$tenantc" build --help | grep -q -- '--jobs'; then threads_flag=1; fi

work=$(mktemp -d "$SCRATCH/tenantc-scale.XXXXXX")
trap 'rm -rf "$work"' EXIT
# A copy, so a rebuild during the run cannot change the binary being measured.
cp "$tenantc" "$work/tenantc"
tenantc=$work/tenantc

# median FILE: the middle of the numbers in FILE (one a line).
median() { sort -g "$1" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
# timed OUT CMD...: appends "<seconds> <max RSS KiB>" of CMD to OUT; fails when CMD fails.
timed() {
    local out=$1
    shift
    /usr/bin/time -f '%e %M' -o "$work/time.one" "$@" >/dev/null 2>"$work/stderr.one" || {
        say "failed: $*"
        cat "$work/stderr.one" >&2
        exit 1
    }
    cat "$work/time.one" >>"$out"
}
col() { awk -v c="$1" '{ print $c }' "$2" >"$2.$1"; median "$2.$1"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
# written DIR STAMP: bytes of the files under DIR changed since STAMP was touched (the lock
# file every build takes, `.tenantc-lock`, left out).
written() { find "$1" -type f -newer "$2" ! -name .tenantc-lock -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }'; }
sum_bytes() { find "$1" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }'; }

echo "## tenantc scale benchmark"
echo
echo "- $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), scratch $SCRATCH ($(df --output=fstype "$SCRATCH" | tail -1))"
echo "- tenantc $(cd "$repo" && git rev-parse --short HEAD), seed $SEED, $CELLS cells, medians of $RUNS, parallel runs with $THREADS threads"
echo "- load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo

rows=()
kube_rows=()
for tenants in "${SIZES[@]}"; do
    dir=$work/$tenants
    fleet=$dir/fleet
    out=$dir/out
    mkdir -p "$fleet"
    say "$tenants tenants: generating"
    "$fleetgen" "$fleet" "$tenants" "$CELLS" "$SEED" >/dev/null
    decl_bytes=$(sum_bytes "$fleet")
    models=$(find "$fleet/weights" -name '*.lock' | wc -l)
    : >"$dir/cold" >"$dir/cold1" >"$dir/noop" >"$dir/edit" >"$dir/check" >"$dir/check1" >"$dir/cp" >"$dir/cat"

    say "$tenants tenants: cold builds"
    for _ in $(seq "$RUNS"); do
        rm -rf "$out"
        touch "$dir/stamp"
        timed "$dir/cold" env TENANTC_THREADS="$THREADS" "$tenantc" build --root "$fleet" --out "$out" --color never
    done
    cold_written=$(written "$out" "$dir/stamp")
    if [ $threads_flag = 1 ]; then
        for _ in $(seq "$RUNS"); do
            rm -rf "$out"
            timed "$dir/cold1" env TENANTC_THREADS=1 "$tenantc" build --root "$fleet" --out "$out" --color never
        done
    fi
    files=$(find "$out" -type f | wc -l)
    out_bytes=$(sum_bytes "$out")

    say "$tenants tenants: cp -r and cat baselines"
    for _ in $(seq "$RUNS"); do
        rm -rf "$dir/copy"
        timed "$dir/cp" cp -r "$out" "$dir/copy"
        timed "$dir/cat" sh -c 'find "$1" -type f -print0 | xargs -0 cat' sh "$out"
    done
    rm -rf "$dir/copy"

    say "$tenants tenants: no-op builds"
    for _ in $(seq "$RUNS"); do
        touch "$dir/stamp"
        timed "$dir/noop" env TENANTC_THREADS="$THREADS" "$tenantc" build --root "$fleet" --out "$out" --color never
    done
    noop_written=$(written "$out" "$dir/stamp")

    say "$tenants tenants: one-tenant edits"
    # A mig tenant's first quota: its cpu ceiling goes from 64 to 65 cores and back.
    edited=$(grep -l 'trust "mig"' "$fleet"/tenants/*.kdl | sed -n 1p)
    edit_written=0
    for run in $(seq "$RUNS"); do
        if [ $((run % 2)) = 1 ]; then
            sed -i '0,/cpu="64"/s//cpu="65"/' "$edited"
        else
            sed -i '0,/cpu="65"/s//cpu="64"/' "$edited"
        fi
        touch "$dir/stamp"
        timed "$dir/edit" env TENANTC_THREADS="$THREADS" "$tenantc" build --root "$fleet" --out "$out" --color never
        edit_written=$(written "$out" "$dir/stamp")
    done

    say "$tenants tenants: check"
    for _ in $(seq "$RUNS"); do
        timed "$dir/check" env TENANTC_THREADS="$THREADS" "$tenantc" check --root "$fleet" --out "$out" --color never
        if [ $threads_flag = 1 ]; then
            timed "$dir/check1" env TENANTC_THREADS=1 "$tenantc" check --root "$fleet" --out "$out" --color never
        fi
    done

    cold=$(col 1 "$dir/cold")
    cold_rss=$(col 2 "$dir/cold")
    noop=$(col 1 "$dir/noop")
    edit=$(col 1 "$dir/edit")
    check=$(col 1 "$dir/check")
    check_rss=$(col 2 "$dir/check")
    cp_time=$(col 1 "$dir/cp")
    cat_time=$(col 1 "$dir/cat")
    if [ $threads_flag = 1 ]; then
        cold1=$(col 1 "$dir/cold1")
        check1=$(col 1 "$dir/check1")
        speed="$(ratio "$cold1" "$cold")x / $(ratio "$check1" "$check")x"
        one="$cold1 / $check1"
    else
        speed="n/a"
        one="n/a"
    fi
    rows+=("| $tenants | $models | $(mib $((decl_bytes / 1024))) | $files | $(mib $((out_bytes / 1024))) | $cold ($(ratio "$cold" "$cp_time")x cp -r $cp_time) | $noop | $edit ($(ratio "$edit" "$noop")x no-op) | $check ($(ratio "$check" "$cat_time")x cat $cat_time) | $one | $speed | $(mib "$cold_rss") / $(mib "$check_rss") | $(mib $((cold_written / 1024))) MiB / $noop_written B / $edit_written B |")

    if [[ " $KUSTOMIZE " == *" $tenants "* ]]; then
        say "$tenants tenants: kubectl kustomize of every synced folder"
        # The folders the ApplicationSets and Flux Kustomizations sync, as `out/...` paths.
        grep -ho 'path: "\?\(\./\)\?out/[^"]*' "$out"/argocd/*.yaml "$out"/flux/*.yaml 2>/dev/null |
            sed 's/^path: "\{0,1\}\(\.\/\)\{0,1\}out\///' | sort -u >"$dir/synced"
        synced=$(wc -l <"$dir/synced")
        start=$(date +%s.%N)
        while read -r folder; do
            "$KUBECTL" kustomize "$out/$folder" >/dev/null
        done <"$dir/synced"
        end=$(date +%s.%N)
        sharded=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", b - a }')
        /usr/bin/time -f '%e' -o "$dir/cell.time" "$KUBECTL" kustomize "$out/c00" >/dev/null
        cell_time=$(cat "$dir/cell.time")
        kube_rows+=("| $tenants | $synced | $sharded | $(ratio "$sharded" "$check")x | $cell_time |")
    fi
    rm -rf "$dir"
done

echo "| tenants | signed models | declarations MiB | output files | output MiB | cold build s | no-op build s | one-tenant edit s | check s | 1 thread: cold / check s | $THREADS threads over 1: cold / check | peak RSS MiB: cold / check | written: cold / no-op / edit |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
if [ ${#kube_rows[@]} -gt 0 ]; then
    echo
    echo "GitOps render step, one pass (\`kubectl kustomize\` per synced folder, as Argo CD and Flux run it), against \`tenantc check\` and one \`kubectl kustomize\` of the whole cell c00:"
    echo
    echo "| tenants | synced folders | kustomize of every folder s | over check | kustomize of cell c00 s |"
    echo "|---|---|---|---|---|"
    printf '%s\n' "${kube_rows[@]}"
fi
echo
echo "- load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
