#!/usr/bin/env bash
# Build promtool once, cached outside the clone (issue 20 item 3).
#
# Consumes: Go with access to the Go module proxy (only when the cache is empty).
# Produces: ${TENANTC_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tenantc-tools}/bin/promtool,
# the promtool of the pinned Prometheus module version, and a `promtool.version` stamp next to
# it; prints the binary's path on stdout.
# Invariants: the binary is reused only when its stamp names the pinned version; a failed build
# leaves no binary behind (it is built into a fresh GOBIN and moved into place).
#
# Environment:
#   TENANTC_TOOLS_CACHE   cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/tenantc-tools)
#   PROMTOOL_VERSION      module version (default v0.316.0, the one tests/promtool.rs expects)
set -euo pipefail

VERSION=${PROMTOOL_VERSION:-v0.316.0}
MODULE=github.com/prometheus/prometheus/cmd/promtool
CACHE_ROOT=${TENANTC_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tenantc-tools}
BIN_DIR="$CACHE_ROOT/bin"
BIN="$BIN_DIR/promtool"
STAMP="$BIN_DIR/promtool.version"

log() { echo "promtool-install: $*" >&2; }

if [ -x "$BIN" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$VERSION" ]; then
    log "reusing promtool $VERSION in $BIN_DIR"
    echo "$BIN"
    exit 0
fi
command -v go >/dev/null 2>&1 || {
    log "go is not installed; it is needed once to build promtool $VERSION into $BIN_DIR"
    exit 1
}
mkdir -p "$BIN_DIR"
staging=$(mktemp -d "$BIN_DIR/.build.XXXXXX")
trap 'rm -rf "$staging"' EXIT
started=$(date +%s)
log "building promtool $VERSION (several minutes cold on two cores)"
# The module may require a newer Go than the installed one; GOTOOLCHAIN lets `go` fetch it
# from the proxy (TENANTC_GOTOOLCHAIN overrides, e.g. go1.27.4).
GOTOOLCHAIN=${TENANTC_GOTOOLCHAIN:-${GOTOOLCHAIN:-auto}} CGO_ENABLED=0 GOBIN="$staging" \
    nice -n 10 go install -trimpath -ldflags "-s -w" "$MODULE@$VERSION" || {
    log "go install $MODULE@$VERSION failed"
    exit 1
}
mv -f "$staging/promtool" "$BIN"
echo "$VERSION" >"$STAMP"
log "built promtool $VERSION in $(($(date +%s) - started)) s"
echo "$BIN"
