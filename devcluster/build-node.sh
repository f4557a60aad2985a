#!/usr/bin/env bash
# Builds a node from Go modules (issue 22): kubelet, kube-proxy, kube-scheduler (the same
# k8s.io/kubernetes version as the control plane), containerd + containerd-shim-runc-v2 +
# ctr, the CNI plugins bridge, host-local, loopback, portmap, and crictl, into a cache
# outside the repo:
#   ${ANNEX_K8S_CACHE:-~/.cache/annex/k8s}/node-<k8s>-containerd<c>-cni<p>-crictl<t>/bin
# Versions: devcluster/versions.env. runc is Debian's (/usr/sbin/runc): not built here.
# Only the node project of npm test (test/node/global-setup.ts) and .ci/run run this.
# Prints the bin directory on stdout; progress goes to stderr.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.env
source "$here/versions.env"
K=$KUBERNETES_VERSION C=$CONTAINERD_VERSION P=$CNI_PLUGINS_VERSION T=$CRI_TOOLS_VERSION
root=${ANNEX_K8S_CACHE:-$HOME/.cache/annex/k8s}
cache=$root/node-$K-containerd$C-cni$P-crictl$T
bin=$cache/bin
start=$(date +%s)
step() { printf '[node-build %4ss] %s\n' "$(( $(date +%s) - start ))" "$*" >&2; }

kube_cmds=(kubelet kube-proxy kube-scheduler)
ctd_cmds=(containerd containerd-shim-runc-v2 ctr)
cni_cmds=(bridge host-local loopback portmap)
all=("${kube_cmds[@]}" "${ctd_cmds[@]}" "${cni_cmds[@]}" crictl)
missing=()
for b in "${all[@]}"; do [[ -x $bin/$b ]] || missing+=("$b"); done
if (( ${#missing[@]} == 0 )); then
  step "cached: $bin"
  echo "$bin"; exit 0
fi
command -v go >/dev/null || { echo "build-node.sh: go is not installed" >&2; exit 3; }
step "to build: ${missing[*]}"
export GOFLAGS=-mod=mod GOTOOLCHAIN=local
mkdir -p "$bin"
needs() { [[ " ${missing[*]} " == *" $1 "* ]]; }
timed_build() { # name, then go build arguments
  local b=$1; shift
  local t; t=$(date +%s)
  step "building $b"
  go build -trimpath -o "$bin/.$b.partial" "$@"
  mv "$bin/.$b.partial" "$bin/$b"
  step "built $b in $(( $(date +%s) - t ))s"
}

# --- containerd, its runc shim, ctr: tiny mains in a module of our own ---
ctd_missing=()
for b in "${ctd_cmds[@]}"; do needs "$b" && ctd_missing+=("$b"); done
if (( ${#ctd_missing[@]} > 0 )); then
  mkdir -p "$cache/containerd"; cd "$cache/containerd"
  m=github.com/containerd/containerd/v2
  mkdir -p containerd shim ctr
  cat > containerd/main.go <<'GO'
package main

import (
	"context"
	"fmt"
	"os"

	_ "github.com/containerd/containerd/v2/cmd/containerd/builtins"
	"github.com/containerd/containerd/v2/cmd/containerd/command"
)

func main() {
	if err := command.App().Run(context.Background(), os.Args); err != nil {
		fmt.Fprintf(os.Stderr, "containerd: %s\n", err)
		os.Exit(1)
	}
}
GO
  cat > shim/main.go <<'GO'
package main

import (
	"context"

	"github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2/manager"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2/task/plugin"
	"github.com/containerd/containerd/v2/pkg/shim"
)

func main() {
	shim.RunShim(context.Background(), manager.NewShimManager("io.containerd.runc.v2"))
}
GO
  cat > ctr/main.go <<'GO'
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/containerd/containerd/v2/cmd/ctr/app"
)

func main() {
	if err := app.New().Run(context.Background(), os.Args); err != nil {
		fmt.Fprintf(os.Stderr, "ctr: %s\n", err)
		os.Exit(1)
	}
}
GO
  if ! grep -q "$m v$C" go.mod 2>/dev/null; then
    step "containerd v$C: preparing module"
    rm -f go.mod go.sum
    go mod init annex.local/containerd-harness >/dev/null 2>&1
    go get "$m@v$C" >&2
  fi
  CGO_ENABLED=0 go mod tidy >&2
  ld="-s -w -X $m/version.Version=v$C"
  for b in "${ctd_missing[@]}"; do
    case $b in
      containerd) CGO_ENABLED=0 timed_build containerd -ldflags "$ld" ./containerd ;;
      containerd-shim-runc-v2) CGO_ENABLED=0 timed_build containerd-shim-runc-v2 -ldflags "$ld" ./shim ;;
      ctr) CGO_ENABLED=0 timed_build ctr -ldflags "$ld" ./ctr ;;
    esac
  done
fi

# --- CNI plugins ---
cni_missing=()
for b in "${cni_cmds[@]}"; do needs "$b" && cni_missing+=("$b"); done
if (( ${#cni_missing[@]} > 0 )); then
  mkdir -p "$cache/cni"; cd "$cache/cni"
  m=github.com/containernetworking/plugins
  if ! grep -q "$m v$P" go.mod 2>/dev/null; then
    step "CNI plugins v$P: preparing module"
    rm -f go.mod go.sum
    go mod init annex.local/cni-harness >/dev/null 2>&1
    go get "$m@v$P" >&2
  fi
  for b in "${cni_missing[@]}"; do
    case $b in
      bridge | loopback) p=plugins/main/$b ;;
      host-local) p=plugins/ipam/host-local ;;
      portmap) p=plugins/meta/portmap ;;
    esac
    CGO_ENABLED=0 timed_build "$b" -ldflags "-s -w" "$m/$p"
  done
fi

# --- crictl ---
if needs crictl; then
  mkdir -p "$cache/crictl"; cd "$cache/crictl"
  m=sigs.k8s.io/cri-tools
  if ! grep -q "$m v$T" go.mod 2>/dev/null; then
    step "cri-tools v$T: preparing module"
    rm -f go.mod go.sum
    go mod init annex.local/crictl-harness >/dev/null 2>&1
    go get "$m@v$T" >&2
  fi
  CGO_ENABLED=0 timed_build crictl -ldflags "-s -w -X $m/pkg/version.Version=v$T" "$m/cmd/crictl"
fi

# --- kubelet, kube-proxy, kube-scheduler: the control plane's harness module, copied ---
kube_missing=()
for b in "${kube_cmds[@]}"; do needs "$b" && kube_missing+=("$b"); done
if (( ${#kube_missing[@]} > 0 )); then
  cp_cache=$root/$K-etcd$ETCD_VERSION/kube
  if [[ ! -f $cp_cache/go.mod ]]; then
    step "no control-plane harness module yet: running build.sh"
    bash "$here/build.sh" >/dev/null
  fi
  mkdir -p "$cache/kube"; cd "$cache/kube"
  if ! grep -q "k8s.io/kubernetes v$K" go.mod 2>/dev/null; then
    step "kubernetes v$K: harness module copied from $cp_cache"
    cp "$cp_cache/go.mod" "$cp_cache/go.sum" .
    sed -i 's|^module .*|module annex.local/k8s-node-harness|' go.mod
  fi
  # The kubelet needs modules (and go.sum lines) kube-apiserver did not: a tools.go that
  # imports every main we build, then `go mod tidy`.
  {
    echo '//go:build tools'
    echo 'package tools'
    echo 'import ('
    for b in "${kube_cmds[@]}"; do echo "  _ \"k8s.io/kubernetes/cmd/$b\""; done
    echo ')'
  } > tools.go
  step "resolving the node's dependencies (go mod tidy)"
  CGO_ENABLED=0 go mod tidy >&2
  minor=${K#*.}; minor=${minor%%.*}
  ld="-s -w -X k8s.io/component-base/version.gitVersion=v$K -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
  for b in "${kube_missing[@]}"; do
    CGO_ENABLED=0 timed_build "$b" -pgo=off -ldflags "$ld" "k8s.io/kubernetes/cmd/$b"
  done
fi

step "done: $bin"
echo "$bin"
