#!/usr/bin/env bash
# Fills fuzz/corpus/{kdl,yaml,compile}/ with seeds made from the repository's own declarations:
# the example fleet (tenants/, cells/), the KDL/YAML twins (tests/twins/), the fixtures
# (tests/fixtures/) and every fixture case (tests/cases/*/*/input/, with the fixtures its
# `shared` file names). The seeds are derived, not committed; run this before fuzzing.
# Usage: bash fuzz/seed.sh   (from anywhere; it is idempotent and only adds files)
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
corpus="$repo/fuzz/corpus"
mkdir -p "$corpus/kdl" "$corpus/yaml" "$corpus/compile"

# A seed's name is its path with `/` turned into `--`, so a finding can be traced to its seed.
seed_name() {
    printf '%s' "${1#"$repo"/}" | sed 's#/#--#g'
}

# One file per declaration, for the front-end targets.
while IFS= read -r -d '' file; do
    case "$file" in
        *.kdl) cp "$file" "$corpus/kdl/$(seed_name "$file")" ;;
        *.yaml | *.yml) cp "$file" "$corpus/yaml/$(seed_name "$file")" ;;
    esac
done < <(find "$repo/tenants" "$repo/cells" "$repo/tests/twins" "$repo/tests/fixtures" "$repo/tests/cases" \
    -type f \( -name '*.kdl' -o -name '*.yaml' -o -name '*.yml' \) -print0 | sort -z)

# One bundle per fleet for the `compile` target: `=== <path>\n<contents>` per file, the format
# `tenantc_fuzz::split_inputs` reads.
bundle() {
    local root="$1" name="$2" out
    out="$corpus/compile/$name"
    : > "$out"
    while IFS= read -r -d '' file; do
        # A file's own final newline ends it; one is added where it lacks one.
        if [ -s "$out" ] && [ "$(tail -c 1 "$out" | od -An -c | tr -d ' ')" != '\n' ]; then
            printf '\n' >> "$out"
        fi
        printf '=== %s\n' "${file#"$root"/}" >> "$out"
        cat "$file" >> "$out"
    done < <(find "$root/tenants" "$root/cells" -type f -print0 2>/dev/null | sort -z)
    [ -s "$out" ] || rm -f "$out"
}

bundle "$repo" example-fleet
bundle "$repo/tests/twins/kdl" twins--kdl
bundle "$repo/tests/twins/yaml" twins--yaml
# A case's root as tests/support/mod.rs (`case_root`) makes it: the fixtures its `shared` file
# names (`<path in input/> = <file or folder under tests/fixtures/>`), then its own input/.
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
case_root() {
    local case_dir="$1" root="$scratch/$(basename "$1")" line destination source
    if [ ! -f "$case_dir/shared" ]; then
        printf '%s' "$case_dir/input"
        return
    fi
    mkdir -p "$root"
    while IFS= read -r line; do
        case "$line" in '' | '#'* | 'replace '*) continue ;; esac
        destination="${line%% = *}"
        source="$repo/tests/fixtures/${line#* = }"
        if [ "$destination" = . ]; then
            cp -R "$source/." "$root/"
        else
            mkdir -p "$(dirname "$root/$destination")"
            cp -R "$source" "$root/$destination"
        fi
    done < "$case_dir/shared"
    if [ -d "$case_dir/input" ]; then
        cp -R "$case_dir/input/." "$root/"
    fi
    printf '%s' "$root"
}
for case_dir in "$repo"/tests/cases/*/*/; do
    case_dir="${case_dir%/}"
    bundle "$(case_root "$case_dir")" "$(basename "$(dirname "$case_dir")")--$(basename "$case_dir")"
done

for target in kdl yaml compile; do
    echo "fuzz/corpus/$target: $(find "$corpus/$target" -type f | wc -l) seeds"
done
