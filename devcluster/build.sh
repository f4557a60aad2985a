#!/usr/bin/env bash
# Builds kube-apiserver, kubectl, kube-controller-manager and etcd from Go modules into a cache outside
# the repo: ${ANNEX_K8S_CACHE:-~/.cache/annex/k8s}/<k8s>-etcd<etcd>/bin.
# Shipped in the package (`files` in package.json): `annex demo` runs it from an installed
# annex as from a checkout, and the tests and .ci/run use this same copy.
# k8s.io/kubernetes pins its staging modules at v0.0.0 and replaces them with
# local paths, so `go install` cannot build it; a harness module that replaces
# each staging module with its published v0.X.Y tag can (see docs/architecture.md, "The test control plane").
# Prints the bin directory on stdout; progress goes to stderr.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.env
source "$here/versions.env"
K=$KUBERNETES_VERSION E=$ETCD_VERSION
cache=${ANNEX_K8S_CACHE:-$HOME/.cache/annex/k8s}/$K-etcd$E
bin=$cache/bin
start=$(date +%s)
step() { printf '[k8s-build %4ss] %s\n' "$(( $(date +%s) - start ))" "$*" >&2; }

# Each binary is built only when missing, into a .partial file then renamed: a cache
# made before kube-controller-manager joined the set builds just that one (the Go build
# cache makes it mostly a link step of already-compiled packages).
kube_cmds=(kube-apiserver kubectl kube-controller-manager)
missing=()
for b in "${kube_cmds[@]}" etcd; do [[ -x $bin/$b ]] || missing+=("$b"); done
if (( ${#missing[@]} == 0 )); then
  step "cached: $bin (kubernetes v$K, etcd v$E)"
  echo "$bin"; exit 0
fi
command -v go >/dev/null || { echo "build.sh: go is not installed; it is needed to build kube-apiserver v$K" >&2; exit 3; }
step "to build: ${missing[*]}"

export CGO_ENABLED=0 GOFLAGS=-mod=mod GOTOOLCHAIN=local
mkdir -p "$cache/kube" "$cache/etcd" "$bin"
minor=${K#*.}; minor=${minor%%.*}
needs() { [[ " ${missing[*]} " == *" $1 "* ]]; }

kube_missing=()
for b in "${kube_cmds[@]}"; do needs "$b" && kube_missing+=("$b"); done
if (( ${#kube_missing[@]} > 0 )); then
  cd "$cache/kube"
  if ! grep -q "k8s.io/kubernetes v$K" go.mod 2>/dev/null; then
    step "kubernetes v$K: preparing harness module ($(go version | cut -d' ' -f3))"
    rm -f go.mod go.sum
    go mod init annex.local/k8s-harness >/dev/null 2>&1
    gomod=$(cd "$(mktemp -d)" && go mod download -json "k8s.io/kubernetes@v$K" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
    [[ -f $gomod ]] || { echo "build.sh: could not download k8s.io/kubernetes@v$K from the module proxy" >&2; exit 1; }
    goline=$(sed -n 's/^go \([0-9.]*\).*/\1/p' "$gomod" | head -1)
    go mod edit -go="$goline"
    godebug=$(sed -n 's/^godebug \(.*\)/\1/p' "$gomod" | head -1)
    [[ -n $godebug ]] && go mod edit -godebug="$godebug"
    n=0
    for m in $(sed -n 's|^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/src/.*|\1|p' "$gomod"); do
      go mod edit -replace="$m=$m@v0.${K#1.}"; n=$((n+1))
    done
    step "replaced $n staging modules with v0.${K#1.}; resolving dependencies"
    go get "k8s.io/kubernetes@v$K" >&2
  else
    step "kubernetes v$K: reusing the harness module in $cache/kube"
  fi
  pkgs=(); for b in "${kube_missing[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$b"); done
  go get "${pkgs[@]}" >&2
  ld="-s -w -X k8s.io/component-base/version.gitVersion=v$K -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
  for b in "${kube_missing[@]}"; do
    case $b in
      kube-apiserver) step "building kube-apiserver (the long step: several minutes on 2 cores)" ;;
      kube-controller-manager) step "building kube-controller-manager (minutes cold; shares most packages with kube-apiserver)" ;;
      *) step "building $b" ;;
    esac
    t=$(date +%s)
    go build -trimpath -pgo=off -ldflags "$ld" -o "$bin/.$b.partial" "k8s.io/kubernetes/cmd/$b"
    mv "$bin/.$b.partial" "$bin/$b"
    step "built $b in $(( $(date +%s) - t ))s"
  done
fi

if needs etcd; then
  step "etcd v$E: preparing harness module"
  cd "$cache/etcd"
  rm -f go.mod go.sum
  go mod init annex.local/etcd-harness >/dev/null 2>&1
  go get "go.etcd.io/etcd/server/v3@v$E" >&2
  step "building etcd"
  go build -trimpath -ldflags "-s -w" -o "$bin/.etcd.partial" go.etcd.io/etcd/server/v3
  mv "$bin/.etcd.partial" "$bin/etcd"
fi

step "done: $bin"
echo "$bin"
