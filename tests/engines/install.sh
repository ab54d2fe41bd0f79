#!/usr/bin/env bash
# Build the policy engines' CLIs once, cached outside the clone (issue 22 item 3).
#
# Consumes: Go with access to the Go module proxy (only when the cache is empty).
# Produces: ${TENANTC_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tenantc-tools}/bin/kyverno and
# .../bin/gator, each with a `<name>.version` stamp next to it; prints `kyverno=<path>` and
# `gator=<path>` on stdout, one a line.
# Invariants: a binary is reused only when its stamp names the pinned version; a failed or
# stopped build leaves no binary behind (each is built into a fresh folder, moved into place,
# and the folder removed on exit); Go builds run one at a time on this machine (flock on
# /tmp/tenantc-go-build.lock) and niced.
#
# kyverno: the module github.com/kyverno/kyverno replaces k8s.io/pod-security-admission with its
# fork github.com/kyverno/pod-security-admission, and `go install module@version` refuses a module
# with `replace` directives; it is built with `go build` in a copy of the module, whose `replace`
# the main module then honours. Dropping the `replace` does not build: pkg/pss calls the fork's
# own API (CheckPod options, CheckResult.ErrList), which upstream v0.36.2 does not have.
# gator: a plain `go install` of the Gatekeeper module's cmd/gator.
#
# Environment:
#   TENANTC_TOOLS_CACHE   cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/tenantc-tools)
#   KYVERNO_VERSION       module version (default v1.19.1, the one tests/engines.rs expects)
#   GATOR_VERSION         module version (default v3.23.1, the one tests/engines.rs expects)
#   TENANTC_GOTOOLCHAIN   toolchain for the builds (default go1.27.4)
set -euo pipefail

KYVERNO_VERSION=${KYVERNO_VERSION:-v1.19.1}
GATOR_VERSION=${GATOR_VERSION:-v3.23.1}
CACHE_ROOT=${TENANTC_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tenantc-tools}
BIN_DIR="$CACHE_ROOT/bin"
TOOLCHAIN=${TENANTC_GOTOOLCHAIN:-go1.27.4}
LOCK=/tmp/tenantc-go-build.lock

log() { echo "engines-install: $*" >&2; }

fresh() { # fresh NAME VERSION: the cached binary is the pinned version
    [ -x "$BIN_DIR/$1" ] && [ "$(cat "$BIN_DIR/$1.version" 2>/dev/null)" = "$2" ]
}

need_go() {
    command -v go >/dev/null 2>&1 || {
        log "go is not installed; it is needed once to build $1 into $BIN_DIR"
        exit 1
    }
}

build_kyverno() {
    local staging=$1 dir
    dir=$(GOTOOLCHAIN=$TOOLCHAIN go mod download -json "github.com/kyverno/kyverno@$KYVERNO_VERSION" |
        sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
    [ -n "$dir" ] && [ -d "$dir" ] || {
        log "go mod download github.com/kyverno/kyverno@$KYVERNO_VERSION gave no folder"
        return 1
    }
    cp -r "$dir" "$staging/src"
    chmod -R u+w "$staging/src"
    (
        cd "$staging/src"
        GOTOOLCHAIN=$TOOLCHAIN GOFLAGS=-mod=mod CGO_ENABLED=0 \
            nice -n 10 go build -trimpath -ldflags "-s -w" -o "$staging/kyverno" ./cmd/cli/kubectl-kyverno
    )
}

build_gator() {
    local staging=$1
    GOTOOLCHAIN=$TOOLCHAIN CGO_ENABLED=0 GOBIN="$staging" \
        nice -n 10 go install -trimpath -ldflags "-s -w" \
        "github.com/open-policy-agent/gatekeeper/v3/cmd/gator@$GATOR_VERSION"
}

# The staging folder of the build under way, removed however the script ends (`.ci/run` stops
# an unfinished background build with SIGTERM).
STAGING=""
trap 'if [ -n "$STAGING" ]; then rm -rf "$STAGING"; fi' EXIT
trap 'exit 143' TERM INT

install_one() { # install_one NAME VERSION
    local name=$1 version=$2 staging started
    if fresh "$name" "$version"; then
        log "reusing $name $version in $BIN_DIR"
        return 0
    fi
    need_go "$name"
    mkdir -p "$BIN_DIR"
    staging=$(mktemp -d "$BIN_DIR/.build-$name.XXXXXX")
    STAGING=$staging
    started=$(date +%s)
    log "building $name $version (several minutes cold on two cores)"
    if ! flock "$LOCK" bash -c "$(declare -f build_kyverno build_gator log); \
        KYVERNO_VERSION=$KYVERNO_VERSION GATOR_VERSION=$GATOR_VERSION TOOLCHAIN=$TOOLCHAIN \
        build_$name '$staging'"; then
        log "building $name $version failed"
        rm -rf "$staging"
        return 1
    fi
    mv -f "$staging/$name" "$BIN_DIR/$name"
    echo "$version" >"$BIN_DIR/$name.version"
    rm -rf "$staging"
    STAGING=""
    log "built $name $version in $(($(date +%s) - started)) s"
}

install_one gator "$GATOR_VERSION"
install_one kyverno "$KYVERNO_VERSION"
echo "kyverno=$BIN_DIR/kyverno"
echo "gator=$BIN_DIR/gator"
