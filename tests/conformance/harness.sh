#!/usr/bin/env bash
# A real Kubernetes control plane on loopback for the conformance tests (issue 11).
#
# Consumes: tests/conformance/build/go.mod and go.sum (the pinned Kubernetes version), Go with
# access to the Go module proxy (build only), Debian's etcd-server and redis-server (installed
# with apt-get when missing), openssl.
# Produces: kube-apiserver and kube-controller-manager binaries cached outside the repository,
# a running etcd + kube-apiserver + kube-controller-manager with generated certificates and
# tokens, a kubeconfig and an env file. kube-controller-manager runs only the controllers the
# checks need: clusterrole aggregation (the admin, edit and view roles), service accounts (each
# namespace's `default`) and resource quotas (quota admission enforces only the limits a quota's
# status lists).
# Invariants: everything listens on 127.0.0.1 only, on free ports chosen at start; all state
# lives in one throw-away run folder; `run` always stops what it started (EXIT, INT, TERM).
#
# Commands:
#   harness.sh build            build (or reuse) the binaries of the pinned version
#   harness.sh build-sim        also build (or reuse) the simulated cell's kube-scheduler, KWOK
#                               and Kueue, with Kueue's CRDs and webhooks and KWOK's stages
#   harness.sh build-gitops     build (or reuse) the GitOps controllers: kustomize-controller, the
#                               flux CLI, Argo CD and kustomize, with their CRDs and Argo CD's repo
#                               server scripts
#   harness.sh ensure-etcd      install Debian's etcd-server when etcd is missing
#   harness.sh ensure-redis     install Debian's redis-server (for Argo CD) when it is missing
#   harness.sh start            build if needed (build-sim, build-gitops), start all three, wait for readiness, print the env file
#   harness.sh stop             stop what `start` started and remove its run folder
#   harness.sh env              print the path of the env file of the running control plane
#   harness.sh run -- CMD...    start, run CMD with the env exported, always stop afterwards
#
# Environment:
#   TENANTC_CONFORMANCE_CACHE   binary cache (default ${XDG_CACHE_HOME:-$HOME/.cache}/tenantc-conformance)
#   TENANTC_CONFORMANCE_RUN     run folder of `start`/`stop` (default ${TMPDIR:-/tmp}/tenantc-conformance-run);
#                               `run` makes a fresh ${TMPDIR:-/tmp}/tenantc-conformance-run.XXXXXX unless it is set
#
# The env file sets KUBECONFIG (admin, system:masters), TENANTC_CONFORMANCE_KUBECONFIG (same),
# TENANTC_CONFORMANCE_USER_KUBECONFIG (a plain user who may only impersonate),
# TENANTC_CONFORMANCE_VERSION, TENANTC_CONFORMANCE_RUN (the run folder, with logs/),
# TENANTC_CONFORMANCE_BIN (the binaries, so that a check can start more controllers of the
# same build for itself), TENANTC_CONFORMANCE_GITOPS (the GitOps controllers) and
# TENANTC_CONFORMANCE=1.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BUILD_MODULE="$HERE/build"
# The pinned version is the one k8s.io/kubernetes is required at in the build module.
K8S_VERSION=$(awk '$1 == "k8s.io/kubernetes" && $2 ~ /^v1\./ { print $2 } $1 == "require" && $2 == "k8s.io/kubernetes" { print $3 }' "$BUILD_MODULE/go.mod")
[ -n "$K8S_VERSION" ] || {
    echo "harness: no 'k8s.io/kubernetes v1.Y.Z' requirement in $BUILD_MODULE/go.mod" >&2
    exit 2
}
CACHE_ROOT=${TENANTC_CONFORMANCE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tenantc-conformance}
BIN_DIR="$CACHE_ROOT/$K8S_VERSION"
RUN_BASE=${TMPDIR:-/tmp}/tenantc-conformance-run
# `start` and `stop` share one fixed folder; `run` makes its own (below), so two runs at once
# do not stop each other.
RUN_DIR=${TENANTC_CONFORMANCE_RUN:-$RUN_BASE}

log() { echo "harness: $*" >&2; }
die() {
    log "$*"
    exit 1
}

# The stamp names the inputs of a cached build: the binaries are reused only when the build
# module (and so every dependency version) is byte-identical.
build_stamp() {
    cat "$BUILD_MODULE/go.mod" "$BUILD_MODULE/go.sum" | sha256sum | cut -c1-64
}

cmd_build() {
    local stamp
    stamp=$(build_stamp)
    if [ -x "$BIN_DIR/kube-apiserver" ] && [ -x "$BIN_DIR/kube-controller-manager" ] &&
        [ "$(cat "$BIN_DIR/stamp" 2>/dev/null)" = "$stamp" ]; then
        log "reusing Kubernetes $K8S_VERSION binaries in $BIN_DIR"
        return 0
    fi
    command -v go >/dev/null 2>&1 || die "go is not installed; it is needed once to build Kubernetes $K8S_VERSION into $BIN_DIR"
    mkdir -p "$BIN_DIR"
    rm -f "$BIN_DIR/stamp"
    local minor=${K8S_VERSION#v1.}
    minor=${minor%%.*}
    # The version variables make `kubectl version` and /version report the pinned release.
    local ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION"
    ldflags+=" -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor"
    ldflags+=" -X k8s.io/component-base/version.gitTreeState=clean"
    local cmd started
    for cmd in kube-apiserver kube-controller-manager; do
        log "building $cmd $K8S_VERSION (about 12 min cold for the first on two cores)"
        started=$(date +%s)
        (cd "$BUILD_MODULE" && CGO_ENABLED=0 GOFLAGS=-mod=readonly nice -n 10 \
            go build -trimpath -ldflags "$ldflags" -o "$BIN_DIR/$cmd.new" "k8s.io/kubernetes/cmd/$cmd") ||
            die "go build of $cmd failed"
        mv -f "$BIN_DIR/$cmd.new" "$BIN_DIR/$cmd"
        log "built $cmd in $(($(date +%s) - started)) s"
    done
    echo "$stamp" >"$BIN_DIR/stamp"
}

# The simulated cell (issue 21): kube-scheduler of the same Kubernetes build, KWOK for fake
# nodes and the Kueue controller manager, with the Kueue CRDs and webhook manifests and the KWOK
# stages copied from their modules. Cached beside the Kubernetes binaries, under sim/, with a
# stamp of every input.
KWOK_VERSION=v0.8.0
KUEUE_VERSION=v0.19.2
SIM_DIR="$BIN_DIR/sim"

sim_stamp() {
    { build_stamp; echo "kwok $KWOK_VERSION kueue $KUEUE_VERSION"; } | sha256sum | cut -c1-64
}

# module_dir MODULE@VERSION: the module's folder in the Go module cache (downloaded if missing).
# Run outside any module, so no go.mod or go.sum is touched.
module_dir() {
    local scratch dir
    scratch=$(mktemp -d)
    dir=$( (cd "$scratch" && GOFLAGS= go mod download -json "$1") |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["Dir"])') || dir=""
    rm -rf "$scratch"
    [ -n "$dir" ] && [ -d "$dir" ] || return 1
    echo "$dir"
}

cmd_build_sim() {
    cmd_build
    local stamp
    stamp=$(sim_stamp)
    if [ -x "$SIM_DIR/kube-scheduler" ] && [ -x "$SIM_DIR/kwok" ] && [ -x "$SIM_DIR/kueue" ] &&
        [ "$(cat "$SIM_DIR/stamp" 2>/dev/null)" = "$stamp" ]; then
        log "reusing the simulated cell's binaries in $SIM_DIR"
        return 0
    fi
    command -v go >/dev/null 2>&1 || die "go is not installed; it is needed once to build the simulated cell into $SIM_DIR"
    rm -rf "$SIM_DIR"
    mkdir -p "$SIM_DIR/kueue-manifests/crds" "$SIM_DIR/kwok-stages"
    local minor=${K8S_VERSION#v1.}
    minor=${minor%%.*}
    local ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION"
    ldflags+=" -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor"
    ldflags+=" -X k8s.io/component-base/version.gitTreeState=clean"
    local started gobin
    started=$(date +%s)
    log "building kube-scheduler $K8S_VERSION (shares the build cache of the API server)"
    (cd "$BUILD_MODULE" && CGO_ENABLED=0 GOFLAGS=-mod=readonly nice -n 10 \
        go build -trimpath -ldflags "$ldflags" -o "$SIM_DIR/kube-scheduler.new" k8s.io/kubernetes/cmd/kube-scheduler) ||
        die "go build of kube-scheduler failed"
    mv -f "$SIM_DIR/kube-scheduler.new" "$SIM_DIR/kube-scheduler"
    log "built kube-scheduler in $(($(date +%s) - started)) s"
    gobin=$(mktemp -d "$SIM_DIR/.gobin.XXXXXX")
    started=$(date +%s)
    log "building kwok $KWOK_VERSION"
    CGO_ENABLED=0 GOBIN="$gobin" GOFLAGS= nice -n 10 go install -trimpath -ldflags "-s -w" \
        "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION" || die "go install of kwok $KWOK_VERSION failed"
    log "built kwok in $(($(date +%s) - started)) s"
    started=$(date +%s)
    log "building kueue $KUEUE_VERSION"
    CGO_ENABLED=0 GOBIN="$gobin" GOFLAGS= nice -n 10 go install -trimpath \
        -ldflags "-s -w -X sigs.k8s.io/kueue/pkg/version.GitVersion=$KUEUE_VERSION" \
        "sigs.k8s.io/kueue/cmd/kueue@$KUEUE_VERSION" || die "go install of kueue $KUEUE_VERSION failed"
    log "built kueue in $(($(date +%s) - started)) s"
    mv -f "$gobin/kwok" "$gobin/kueue" "$SIM_DIR/" || die "the built kwok and kueue are missing"
    rm -rf "$gobin"
    local kueue_dir kwok_dir stage
    kueue_dir=$(module_dir "sigs.k8s.io/kueue@$KUEUE_VERSION") || die "the kueue module $KUEUE_VERSION is not in the module cache"
    cp "$kueue_dir"/config/components/crd/bases/*.yaml "$SIM_DIR/kueue-manifests/crds/" || die "no CRDs in $kueue_dir"
    cp "$kueue_dir/config/components/webhook/manifests.yaml" "$SIM_DIR/kueue-manifests/webhooks.yaml" ||
        die "no webhook manifests in $kueue_dir"
    kwok_dir=$(module_dir "sigs.k8s.io/kwok@$KWOK_VERSION") || die "the kwok module $KWOK_VERSION is not in the module cache"
    for stage in node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
        pod/fast/pod-ready.yaml pod/general/pod-complete.yaml pod/fast/pod-delete.yaml; do
        cp "$kwok_dir/kustomize/stage/$stage" "$SIM_DIR/kwok-stages/$(basename "$stage")" ||
            die "no KWOK stage $stage in $kwok_dir"
    done
    chmod -R u+w "$SIM_DIR"
    echo "$stamp" >"$SIM_DIR/stamp"
}

# The GitOps controllers (issue 21 item 4): Flux's kustomize-controller and flux CLI, and Argo CD
# (one multi-call binary: CLI, API server, application and ApplicationSet controllers, repo
# server) with the kustomize its repo server runs. kustomize-controller, the flux CLI and Argo CD
# are not `go install`-able at their versions: their go.mod files hold replace directives, and
# kustomize-controller's and Argo CD's point at folders of their repositories that a module zip
# leaves out (./api, ./gitops-engine). So each is built from a copy of its module with those
# local replace lines removed, which makes Go take the published module of the same version
# instead. Cached under gitops/, apart from the Kubernetes build (a bump of the pinned
# Kubernetes does not rebuild them), with a stamp of every input.
KUSTOMIZE_CONTROLLER_VERSION=v1.9.6
# The source-controller release of Flux v2.9.5; only its CRDs are used (GitRepository,
# OCIRepository and Bucket, which kustomize-controller watches).
SOURCE_CONTROLLER_VERSION=v1.9.5
FLUX_VERSION=v2.9.5
ARGOCD_VERSION=v3.6.1
# Argo CD v3.6.1's repo server runs `kustomize build`; its image ships kustomize v5.8.3, which
# does not build here (its k8s.io/kube-openapi is not in the module proxy), so the patch release
# before it.
KUSTOMIZE_VERSION=v5.8.2
# Argo CD v3.6 and kustomize v5.8 require Go 1.27; `go` fetches this toolchain from the proxy.
GO127_TOOLCHAIN=go1.27.4
GITOPS_DIR="$CACHE_ROOT/gitops"

# The inputs of one tool's build: a tool is rebuilt only when its own line changes.
gitops_tool_stamp() {
    case "$1" in
    kustomize-controller) echo "kustomize-controller $KUSTOMIZE_CONTROLLER_VERSION" ;;
    flux) echo "flux $FLUX_VERSION" ;;
    argocd) echo "argocd $ARGOCD_VERSION $GO127_TOOLCHAIN" ;;
    kustomize) echo "kustomize $KUSTOMIZE_VERSION $GO127_TOOLCHAIN" ;;
    esac
}
GITOPS_TOOLS=(kustomize-controller flux argocd kustomize)

gitops_stamp() {
    {
        local tool
        for tool in "${GITOPS_TOOLS[@]}"; do gitops_tool_stamp "$tool"; done
        echo "source-controller CRDs $SOURCE_CONTROLLER_VERSION, Argo CD CRDs and repo server scripts"
    } | sha256sum | cut -c1-64
}

# gitops_tool_current TOOL: whether the cached TOOL was built from the current inputs.
gitops_tool_current() {
    [ -x "$GITOPS_DIR/$1" ] && [ "$(cat "$GITOPS_DIR/$1.stamp" 2>/dev/null)" = "$(gitops_tool_stamp "$1")" ]
}

# build_module_copy MODULE@VERSION PACKAGE OUTPUT TOOLCHAIN LDFLAGS [PREPARE]: builds PACKAGE
# (relative to the module root) of a copy of the module, without the replace lines that point
# into its own repository, into OUTPUT; PREPARE, a function, is run in the copy first. The copy
# is removed afterwards.
build_module_copy() {
    local module=$1 package=$2 output=$3 toolchain=$4 ldflags=$5 prepare=${6:-}
    local dir work
    dir=$(GOTOOLCHAIN=$toolchain module_dir "$module") || die "the module $module is not in the module proxy"
    work=$(mktemp -d "$GITOPS_DIR/.src.XXXXXX")
    { cp -r "$dir/." "$work/" && chmod -R u+w "$work"; } || die "copying $module failed"
    # `replace example.com/x => ./x`: the folder is not part of the module zip.
    sed -i -E '/^[[:space:]]*(replace[[:space:]]+)?[^[:space:]]+[[:space:]]*=>[[:space:]]*\.\.?\//d' "$work/go.mod"
    if [ -n "$prepare" ]; then
        (cd "$work" && "$prepare") || die "preparing the copy of $module failed"
    fi
    log "building $package of $module (a copy of the module)"
    # bash's `time` of the subshell counts the CPU time of every process the build starts.
    local TIMEFORMAT="harness: built $(basename "$output") in %0R s (%0U s user, %0S s system CPU)"
    time (cd "$work" && CGO_ENABLED=0 GOTOOLCHAIN=$toolchain GOFLAGS=-mod=mod nice -n 10 \
        go build -trimpath -ldflags "-s -w $ldflags" -o "$output.new" "$package") ||
        { rm -rf "$work"; die "go build of $package of $module failed"; }
    mv -f "$output.new" "$output"
    rm -rf "$work"
}

# The flux CLI embeds the install manifests that its Makefile bundles from GitHub releases
# (cmd/flux/manifests/*.yaml); they serve `flux install` only, so the copy gets a placeholder.
flux_cli_placeholder_manifests() {
    mkdir -p cmd/flux/manifests &&
        printf '# The install manifests are not bundled into this build (flux build only).\n' \
            >cmd/flux/manifests/placeholder.yaml
}

build_gitops_tool() {
    local gobin
    case "$1" in
    kustomize-controller)
        build_module_copy "github.com/fluxcd/kustomize-controller@$KUSTOMIZE_CONTROLLER_VERSION" . \
            "$GITOPS_DIR/kustomize-controller" auto ""
        ;;
    flux)
        build_module_copy "github.com/fluxcd/flux2/v2@$FLUX_VERSION" ./cmd/flux "$GITOPS_DIR/flux" auto \
            "-X main.VERSION=${FLUX_VERSION#v}" flux_cli_placeholder_manifests
        ;;
    argocd)
        # One binary: it runs as the component its ARGOCD_BINARY_NAME (or its file name) names.
        build_module_copy "github.com/argoproj/argo-cd/v3@$ARGOCD_VERSION" ./cmd "$GITOPS_DIR/argocd" "$GO127_TOOLCHAIN" \
            "-X github.com/argoproj/argo-cd/v3/common.version=${ARGOCD_VERSION#v} -X github.com/argoproj/argo-cd/v3/common.gitTreeState=clean"
        ;;
    kustomize)
        gobin=$(mktemp -d "$GITOPS_DIR/.gobin.XXXXXX")
        log "building kustomize $KUSTOMIZE_VERSION"
        local TIMEFORMAT="harness: built kustomize in %0R s (%0U s user, %0S s system CPU)"
        time (CGO_ENABLED=0 GOBIN="$gobin" GOFLAGS= GOTOOLCHAIN=$GO127_TOOLCHAIN nice -n 10 go install -trimpath \
            -ldflags "-s -w -X sigs.k8s.io/kustomize/api/provenance.version=kustomize/$KUSTOMIZE_VERSION" \
            "sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION") || die "go install of kustomize $KUSTOMIZE_VERSION failed"
        mv -f "$gobin/kustomize" "$GITOPS_DIR/kustomize" || die "the built kustomize is missing"
        rm -rf "$gobin"
        ;;
    esac
    gitops_tool_stamp "$1" >"$GITOPS_DIR/$1.stamp"
}

cmd_build_gitops() {
    local stamp tool dir
    stamp=$(gitops_stamp)
    if [ "$(cat "$GITOPS_DIR/stamp" 2>/dev/null)" = "$stamp" ]; then
        for tool in "${GITOPS_TOOLS[@]}"; do gitops_tool_current "$tool" || stamp=""; done
        if [ -n "$stamp" ]; then
            log "reusing the GitOps controllers in $GITOPS_DIR"
            return 0
        fi
        stamp=$(gitops_stamp)
    fi
    command -v go >/dev/null 2>&1 || die "go is not installed; it is needed once to build the GitOps controllers into $GITOPS_DIR"
    mkdir -p "$GITOPS_DIR"
    rm -f "$GITOPS_DIR/stamp"
    rm -rf "$GITOPS_DIR"/.src.* "$GITOPS_DIR"/.gobin.*
    for tool in "${GITOPS_TOOLS[@]}"; do
        if gitops_tool_current "$tool"; then
            log "reusing $tool in $GITOPS_DIR"
        else
            build_gitops_tool "$tool"
        fi
    done
    # The CRDs the controllers need, from the same modules.
    rm -rf "$GITOPS_DIR/flux-crds" "$GITOPS_DIR/argocd-crds" "$GITOPS_DIR/argocd-path"
    mkdir -p "$GITOPS_DIR/flux-crds" "$GITOPS_DIR/argocd-crds" "$GITOPS_DIR/argocd-path"
    dir=$(module_dir "github.com/fluxcd/kustomize-controller@$KUSTOMIZE_CONTROLLER_VERSION") || die "no kustomize-controller module"
    cp "$dir"/config/crd/bases/*.yaml "$GITOPS_DIR/flux-crds/" || die "no CRDs in $dir"
    dir=$(GOTOOLCHAIN=$GO127_TOOLCHAIN module_dir "github.com/fluxcd/source-controller@$SOURCE_CONTROLLER_VERSION") ||
        die "the source-controller module $SOURCE_CONTROLLER_VERSION is not in the module proxy"
    cp "$dir"/config/crd/bases/*.yaml "$GITOPS_DIR/flux-crds/" || die "no CRDs in $dir"
    dir=$(GOTOOLCHAIN=$GO127_TOOLCHAIN module_dir "github.com/argoproj/argo-cd/v3@$ARGOCD_VERSION") || die "no argo-cd module"
    cp "$dir"/manifests/crds/*-crd.yaml "$GITOPS_DIR/argocd-crds/" || die "no CRDs in $dir"
    # The scripts Argo CD's image puts on the repo server's PATH (its Dockerfile): it runs
    # git-verify-wrapper.sh on every revision it renders, signed or not.
    cp "$dir"/hack/git-verify-wrapper.sh "$dir"/hack/gpg-wrapper.sh "$GITOPS_DIR/argocd-path/" ||
        die "no repo server scripts in $dir"
    chmod +x "$GITOPS_DIR"/argocd-path/*.sh
    chmod -R u+w "$GITOPS_DIR"
    echo "$stamp" >"$GITOPS_DIR/stamp"
}

ensure_etcd() {
    if command -v etcd >/dev/null 2>&1; then
        return 0
    fi
    [ -x /usr/bin/etcd ] && return 0
    command -v apt-get >/dev/null 2>&1 || die "etcd is missing and there is no apt-get to install Debian's etcd-server"
    local sudo=()
    [ "$(id -u)" -eq 0 ] || sudo=(sudo)
    log "installing Debian's etcd-server"
    "${sudo[@]}" apt-get update -qq >&2 || die "apt-get update failed"
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends etcd-server >&2 ||
        die "apt-get install etcd-server failed"
    # The package starts a system etcd on the default ports where an init system runs; this
    # harness uses its own ports and never talks to it.
}

etcd_bin() {
    command -v etcd 2>/dev/null || echo /usr/bin/etcd
}

# Argo CD's controllers and API server keep the application state in Redis: Debian's
# redis-server, which a check starts on a free loopback port of its own.
ensure_redis() {
    if command -v redis-server >/dev/null 2>&1 || [ -x /usr/bin/redis-server ]; then
        return 0
    fi
    command -v apt-get >/dev/null 2>&1 || die "redis-server is missing and there is no apt-get to install Debian's redis-server"
    local sudo=()
    [ "$(id -u)" -eq 0 ] || sudo=(sudo)
    log "installing Debian's redis-server"
    "${sudo[@]}" apt-get update -qq >&2 || die "apt-get update failed"
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends redis-server >&2 ||
        die "apt-get install redis-server failed"
    # As with etcd, a system redis may start on the default port where an init system runs; the
    # checks never talk to it.
}

# A free TCP port on 127.0.0.1, chosen by the kernel. The short window before the server binds
# it is covered by the readiness checks, which fail loudly.
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# Stop the processes whose pid files are in $1/pids, newest first, then remove $1.
stop_dir() {
    local dir=$1 name pid i
    [ -d "$dir" ] || return 0
    for name in kube-controller-manager kube-apiserver etcd; do
        [ -f "$dir/pids/$name" ] || continue
        pid=$(cat "$dir/pids/$name")
        # Only a process that is still the one started here (same executable name) is signalled.
        if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && grep -q "$name" "/proc/$pid/cmdline" 2>/dev/null; then
            kill "$pid" 2>/dev/null || true
            for i in $(seq 1 50); do
                kill -0 "$pid" 2>/dev/null || break
                sleep 0.1
            done
            kill -9 "$pid" 2>/dev/null || true
        fi
    done
    rm -rf "$dir"
}

cmd_stop() {
    if [ -d "$RUN_DIR" ]; then
        stop_dir "$RUN_DIR"
        log "stopped the control plane of $RUN_DIR"
    fi
}

# gen_certs DIR: a CA, the apiserver serving certificate for 127.0.0.1/localhost, and the RSA
# key that signs service account tokens.
gen_certs() {
    local dir=$1
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=tenantc-conformance-ca" \
        -keyout "$dir/ca.key" -out "$dir/ca.crt" 2>/dev/null || return 1
    openssl req -newkey rsa:2048 -nodes -subj "/CN=kube-apiserver" \
        -keyout "$dir/apiserver.key" -out "$dir/apiserver.csr" 2>/dev/null || return 1
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes.default.svc\nextendedKeyUsage=serverAuth\n' >"$dir/apiserver.ext"
    openssl x509 -req -in "$dir/apiserver.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -CAcreateserial \
        -days 2 -extfile "$dir/apiserver.ext" -out "$dir/apiserver.crt" 2>/dev/null || return 1
    openssl genrsa -out "$dir/sa.key" 2048 2>/dev/null || return 1
    openssl rsa -in "$dir/sa.key" -pubout -out "$dir/sa.pub" 2>/dev/null || return 1
}

# write_kubeconfig FILE PORT TOKEN USER
write_kubeconfig() {
    cat >"$1" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: conformance
  cluster:
    server: https://127.0.0.1:$2
    certificate-authority: $RUN_DIR/pki/ca.crt
users:
- name: $4
  user:
    token: $3
contexts:
- name: $4@conformance
  context:
    cluster: conformance
    user: $4
current-context: $4@conformance
KUBECONFIG
}

# wait_for DESCRIPTION SECONDS PIDNAME COMMAND...: poll COMMAND every 0.2 s; fail when the
# process named PIDNAME died or the time is up, with the tail of its log.
wait_for() {
    local what=$1 seconds=$2 name=$3
    shift 3
    local deadline=$(($(date +%s) + seconds))
    until "$@" >/dev/null 2>&1; do
        if ! kill -0 "$(cat "$RUN_DIR/pids/$name")" 2>/dev/null; then
            log "$name exited while waiting for $what; last lines of its log:"
            tail -n 30 "$RUN_DIR/logs/$name.log" >&2 || true
            return 1
        fi
        if [ "$(date +%s)" -ge "$deadline" ]; then
            log "timed out after ${seconds} s waiting for $what; last lines of the $name log:"
            tail -n 30 "$RUN_DIR/logs/$name.log" >&2 || true
            return 1
        fi
        sleep 0.2
    done
}

# The aggregated roles are filled by the clusterrole-aggregation-controller: `edit` has rules
# once it ran.
aggregated_roles_filled() {
    local role rules
    for role in admin edit view; do
        rules=$(curl -sf --cacert "$RUN_DIR/pki/ca.crt" -H "Authorization: Bearer $ADMIN_TOKEN" \
            "https://127.0.0.1:$API_PORT/apis/rbac.authorization.k8s.io/v1/clusterroles/$role") || return 1
        # An aggregated role without rules says `"rules": null` or has no rules key.
        grep -q '"verbs"' <<<"$rules" || return 1
    done
}

# Quota admission enforces only the limits a ResourceQuota's status lists, so a quota whose status
# the resourcequota-controller has not computed limits nothing: every pod is admitted. A probe
# quota in `default` shows that the controller runs; it is removed once its status is there.
PROBE_QUOTA_URL_PATH=api/v1/namespaces/default/resourcequotas
probe_quota_status_computed() {
    curl -sf --cacert "$RUN_DIR/pki/ca.crt" -H "Authorization: Bearer $ADMIN_TOKEN" \
        "https://127.0.0.1:$API_PORT/$PROBE_QUOTA_URL_PATH/conformance-harness-probe" |
        grep -q '"used"'
}

default_service_account_exists() {
    curl -sf --cacert "$RUN_DIR/pki/ca.crt" -H "Authorization: Bearer $ADMIN_TOKEN" \
        "https://127.0.0.1:$API_PORT/api/v1/namespaces/default/serviceaccounts/default" >/dev/null
}

cmd_start() {
    # The simulated cell's binaries and the GitOps controllers too: the conformance checks
    # include their scenarios.
    cmd_build_sim
    cmd_build_gitops
    ensure_etcd
    ensure_redis
    command -v openssl >/dev/null 2>&1 || die "openssl is needed to generate the certificates"
    command -v curl >/dev/null 2>&1 || die "curl is needed for the readiness checks"
    # A previous run that was killed without cleanup (kill -9, a crashed shell) leaves its
    # processes and folder behind: stop them before starting again. The folders of `run` name
    # the harness that owns them; only those whose owner is gone are stopped.
    if [ -d "$RUN_DIR" ] && [ ! -f "$RUN_DIR/owner" ]; then
        log "stopping the leftovers of a previous run in $RUN_DIR"
        stop_dir "$RUN_DIR"
    fi
    local dir owner
    for dir in "$RUN_BASE".*; do
        [ -f "$dir/owner" ] || continue
        owner=$(cat "$dir/owner")
        if ! kill -0 "$owner" 2>/dev/null; then
            log "stopping the leftovers of a previous run in $dir (its harness $owner is gone)"
            stop_dir "$dir"
        fi
    done
    local started
    started=$(date +%s.%N)
    mkdir -p "$RUN_DIR"/{pki,pids,logs,etcd,apiserver}
    chmod 700 "$RUN_DIR"
    gen_certs "$RUN_DIR/pki" || die "openssl failed to generate the certificates"
    ADMIN_TOKEN=$(openssl rand -hex 24)
    local user_token
    user_token=$(openssl rand -hex 24)
    # token,user,uid,"groups": an admin, and a plain user whose only right (below) is to
    # impersonate; the tests ask as tenant users and groups through impersonation.
    cat >"$RUN_DIR/pki/tokens.csv" <<TOKENS
$ADMIN_TOKEN,conformance-admin,uid-admin,"system:masters"
$user_token,conformance-user,uid-user,"conformance:impersonators"
TOKENS
    chmod 600 "$RUN_DIR/pki/tokens.csv"

    local etcd_port etcd_peer_port
    etcd_port=$(free_port)
    etcd_peer_port=$(free_port)
    API_PORT=$(free_port)

    # The API server's watch cache answers reads at a resource version only once it has seen
    # that version, and a resource nobody writes advances only on etcd's progress
    # notifications, every 10 minutes by default: under the simulated cell's load, lists then
    # failed with "Too large resource version" until Kueue stalled. Every 5 s keeps it current.
    "$(etcd_bin)" --name conformance --data-dir "$RUN_DIR/etcd" \
        --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
        --listen-peer-urls "http://127.0.0.1:$etcd_peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer_port" \
        --initial-cluster "conformance=http://127.0.0.1:$etcd_peer_port" \
        --unsafe-no-fsync --quota-backend-bytes 2147483648 \
        --experimental-watch-progress-notify-interval=5s \
        >"$RUN_DIR/logs/etcd.log" 2>&1 &
    echo $! >"$RUN_DIR/pids/etcd"
    wait_for "etcd health" 30 etcd curl -sf "http://127.0.0.1:$etcd_port/health" || { stop_dir "$RUN_DIR"; return 1; }

    # WatchList=false: KWOK's informers (the simulated cell) start their watches at
    # resourceVersion 0, which this version turns into watch-list requests; Debian's etcd 3.4
    # cannot serve those (no RequestWatchProgress), so KWOK would see changes only when it lists
    # again, seconds to a minute late.
    "$BIN_DIR/kube-apiserver" \
        --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$API_PORT" \
        --tls-cert-file="$RUN_DIR/pki/apiserver.crt" --tls-private-key-file="$RUN_DIR/pki/apiserver.key" \
        --cert-dir="$RUN_DIR/apiserver" \
        --etcd-servers="http://127.0.0.1:$etcd_port" \
        --token-auth-file="$RUN_DIR/pki/tokens.csv" \
        --authorization-mode=RBAC \
        --service-account-issuer=https://kubernetes.default.svc \
        --service-account-key-file="$RUN_DIR/pki/sa.pub" \
        --service-account-signing-key-file="$RUN_DIR/pki/sa.key" \
        --service-cluster-ip-range=10.96.0.0/16 \
        --endpoint-reconciler-type=none \
        --enable-priority-and-fairness=false \
        --feature-gates=WatchList=false \
        >"$RUN_DIR/logs/kube-apiserver.log" 2>&1 &
    echo $! >"$RUN_DIR/pids/kube-apiserver"
    wait_for "kube-apiserver /readyz" 120 kube-apiserver \
        curl -sf --cacert "$RUN_DIR/pki/ca.crt" -H "Authorization: Bearer $ADMIN_TOKEN" \
        "https://127.0.0.1:$API_PORT/readyz" || { stop_dir "$RUN_DIR"; return 1; }

    write_kubeconfig "$RUN_DIR/admin.kubeconfig" "$API_PORT" "$ADMIN_TOKEN" conformance-admin
    write_kubeconfig "$RUN_DIR/user.kubeconfig" "$API_PORT" "$user_token" conformance-user
    chmod 600 "$RUN_DIR"/*.kubeconfig

    "$BIN_DIR/kube-controller-manager" \
        --kubeconfig="$RUN_DIR/admin.kubeconfig" \
        --authentication-kubeconfig="$RUN_DIR/admin.kubeconfig" \
        --authorization-kubeconfig="$RUN_DIR/admin.kubeconfig" \
        --controllers=clusterrole-aggregation-controller,serviceaccount-controller,resourcequota-controller \
        --leader-elect=false --bind-address=127.0.0.1 --secure-port=0 \
        --use-service-account-credentials=false \
        >"$RUN_DIR/logs/kube-controller-manager.log" 2>&1 &
    echo $! >"$RUN_DIR/pids/kube-controller-manager"
    wait_for "the aggregated admin, edit and view ClusterRoles" 60 kube-controller-manager \
        aggregated_roles_filled || { stop_dir "$RUN_DIR"; return 1; }
    wait_for "the default ServiceAccount" 60 kube-controller-manager \
        default_service_account_exists || { stop_dir "$RUN_DIR"; return 1; }
    curl -sf --cacert "$RUN_DIR/pki/ca.crt" -H "Authorization: Bearer $ADMIN_TOKEN" -H "Content-Type: application/json" \
        -X POST "https://127.0.0.1:$API_PORT/$PROBE_QUOTA_URL_PATH" \
        -d '{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"conformance-harness-probe"},"spec":{"hard":{"pods":"1k"}}}' \
        >/dev/null || { log "could not create the probe ResourceQuota"; stop_dir "$RUN_DIR"; return 1; }
    wait_for "the status of a ResourceQuota (resourcequota-controller)" 60 kube-controller-manager \
        probe_quota_status_computed || { stop_dir "$RUN_DIR"; return 1; }
    curl -sf --cacert "$RUN_DIR/pki/ca.crt" -H "Authorization: Bearer $ADMIN_TOKEN" \
        -X DELETE "https://127.0.0.1:$API_PORT/$PROBE_QUOTA_URL_PATH/conformance-harness-probe" >/dev/null || true

    # The plain user may impersonate anyone and nothing else.
    kubectl_admin apply --server-side --field-manager=conformance-harness -f - >/dev/null <<'RBAC' ||
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: conformance:impersonator
rules:
- apiGroups: [""]
  resources: ["users", "groups", "serviceaccounts"]
  verbs: ["impersonate"]
- apiGroups: ["authentication.k8s.io"]
  resources: ["uids", "userextras/*"]
  verbs: ["impersonate"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: conformance:impersonators
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: conformance:impersonator
subjects:
- apiGroup: rbac.authorization.k8s.io
  kind: Group
  name: conformance:impersonators
RBAC
        { log "could not create the impersonation role"; stop_dir "$RUN_DIR"; return 1; }

    cat >"$RUN_DIR/env" <<ENV
KUBECONFIG=$RUN_DIR/admin.kubeconfig
TENANTC_CONFORMANCE=1
TENANTC_CONFORMANCE_KUBECONFIG=$RUN_DIR/admin.kubeconfig
TENANTC_CONFORMANCE_USER_KUBECONFIG=$RUN_DIR/user.kubeconfig
TENANTC_CONFORMANCE_VERSION=$K8S_VERSION
TENANTC_CONFORMANCE_RUN=$RUN_DIR
TENANTC_CONFORMANCE_BIN=$BIN_DIR
TENANTC_CONFORMANCE_GITOPS=$GITOPS_DIR
ENV
    log "Kubernetes $K8S_VERSION ready on https://127.0.0.1:$API_PORT in $(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s (etcd, kube-apiserver, kube-controller-manager)"
    [ -n "$QUIET_ENV_HINT" ] || log "use it with: set -a; . $RUN_DIR/env; set +a"
    echo "$RUN_DIR/env"
}

kubectl_admin() {
    "${KUBECTL:-kubectl}" --kubeconfig "$RUN_DIR/admin.kubeconfig" "$@"
}

cmd_env() {
    [ -f "$RUN_DIR/env" ] || die "no control plane is running in $RUN_DIR (harness.sh start)"
    echo "$RUN_DIR/env"
}

# The command of `run`, while it runs: a signal to the harness is passed on to it.
CHILD=""
# Set by `run`, which passes the env on itself.
QUIET_ENV_HINT=""

on_signal() {
    if [ -n "$CHILD" ]; then
        kill -TERM "$CHILD" 2>/dev/null || true
        wait "$CHILD" 2>/dev/null || true
    fi
    exit "$1"
}

cmd_run() {
    [ "${1:-}" = "--" ] && shift
    [ "$#" -gt 0 ] || die "usage: harness.sh run -- COMMAND..."
    # The traps are set before start, so an interrupt during start also cleans up; EXIT covers
    # failures of start and of the command.
    trap 'cmd_stop' EXIT
    trap 'on_signal 130' INT
    trap 'on_signal 143' TERM
    if [ -z "${TENANTC_CONFORMANCE_RUN:-}" ]; then
        RUN_DIR=$(mktemp -d "$RUN_BASE.XXXXXX")
        echo "$$" >"$RUN_DIR/owner"
    fi
    QUIET_ENV_HINT=1
    cmd_start >/dev/null
    # In the background, so that `wait` returns as soon as a signal arrives (bash runs a trap
    # only after a foreground command ends); stdin is passed on explicitly, as a background
    # command would otherwise read /dev/null.
    exec 3<&0
    (
        set -a
        # shellcheck disable=SC1091
        . "$RUN_DIR/env"
        set +a
        exec "$@"
    ) <&3 3<&- &
    CHILD=$!
    local rc=0
    wait "$CHILD" || rc=$?
    CHILD=""
    return "$rc"
}

main() {
    case "${1:-}" in
    build) cmd_build ;;
    build-sim) cmd_build_sim ;;
    build-gitops) cmd_build_gitops ;;
    ensure-etcd) ensure_etcd ;;
    ensure-redis) ensure_redis ;;
    start) cmd_start ;;
    stop) cmd_stop ;;
    env) cmd_env ;;
    run)
        shift
        cmd_run "$@"
        ;;
    *)
        echo "usage: harness.sh build|build-sim|build-gitops|ensure-etcd|ensure-redis|start|stop|env|run -- COMMAND..." >&2
        exit 2
        ;;
    esac
}

# One line, read whole before it runs: editing this file during a long build cannot change
# what the running shell executes next.
main "$@"; exit "$?"
