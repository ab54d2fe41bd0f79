#!/usr/bin/env bash
# Fills fuzz/corpus/{kdl,yaml,compile}/ with seeds made from the repository's own declarations:
# the example fleet (tenants/, cells/), the KDL/YAML twins (tests/twins/) and every fixture case
# (tests/cases/*/*/input/). The seeds are derived, not committed; run this before fuzzing.
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
done < <(find "$repo/tenants" "$repo/cells" "$repo/tests/twins" "$repo/tests/cases" \
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
for input in "$repo"/tests/cases/*/*/input; do
    case_dir="$(dirname "$input")"
    bundle "$input" "$(basename "$(dirname "$case_dir")")--$(basename "$case_dir")"
done

for target in kdl yaml compile; do
    echo "fuzz/corpus/$target: $(find "$corpus/$target" -type f | wc -l) seeds"
done
