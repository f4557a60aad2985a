#!/usr/bin/env bash
# Builds the node's images offline (no registry is reachable here): the Pod sandbox
# (`localhost/annex-pause:local`), a tiny workload (`localhost/annex-hello:local`) and the
# cluster DNS (`localhost/annex-coredns:local`), each one static Go binary in a one-layer
# image, written by hand as a docker-archive tar that `ctr -n k8s.io images import` reads.
# pause and hello are devcluster/node-images/; CoreDNS is github.com/coredns/coredns at
# COREDNS_VERSION (devcluster/versions.env) with only the plugins devcluster/coredns/main.go
# names, in a module made in the cache as build-node.sh makes containerd's. No podman.
# Cached by a hash of the sources, the CoreDNS version and the Go version:
#   ${ANNEX_K8S_CACHE:-~/.cache/annex/k8s}/node-images-<hash>/{pause,hello,coredns}.tar
# Prints that directory on stdout.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.env
source "$here/versions.env"
src=$here/node-images
key=$( (go version; echo "coredns $COREDNS_VERSION"; sha256sum "$here/coredns/main.go"
  cd "$src" && find . -type f | sort | xargs sha256sum) | sha256sum | cut -c1-12)
root=${ANNEX_K8S_CACHE:-$HOME/.cache/annex/k8s}
out=$root/node-images-$key
if [[ -f $out/pause.tar && -f $out/hello.tar && -f $out/coredns.tar ]]; then
  echo "[node-images] cached: $out" >&2
  echo "$out"; exit 0
fi
mkdir -p "$out"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
sha() { sha256sum "$1" | cut -d' ' -f1; }

image() { # name, user, module folder, package
  local name=$1 user=$2 d=$work/$1 t; t=$(date +%s)
  mkdir -p "$d/rootfs" "$d/archive"
  (cd "$3" && CGO_ENABLED=0 GOFLAGS=-mod=mod GOTOOLCHAIN=local go build -trimpath -ldflags "-s -w" -o "$d/rootfs/$name" "$4")
  tar -C "$d/rootfs" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf "$d/layer.tar" "$name"
  local layer; layer=$(sha "$d/layer.tar")
  mkdir -p "$d/archive/$layer"; mv "$d/layer.tar" "$d/archive/$layer/layer.tar"
  printf '{"architecture":"amd64","os":"linux","created":"1970-01-01T00:00:00Z","config":{"Entrypoint":["/%s"],"User":"%s","WorkingDir":"/"},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]},"history":[{"created":"1970-01-01T00:00:00Z","created_by":"devcluster/build-node-images.sh"}]}' \
    "$name" "$user" "$layer" > "$d/config.json"
  local config; config=$(sha "$d/config.json")
  mv "$d/config.json" "$d/archive/$config.json"
  printf '[{"Config":"%s.json","RepoTags":["localhost/annex-%s:local"],"Layers":["%s/layer.tar"]}]' \
    "$config" "$name" "$layer" > "$d/archive/manifest.json"
  tar -C "$d/archive" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf "$out/.$name.partial" .
  mv "$out/.$name.partial" "$out/$name.tar"
  echo "[node-images] localhost/annex-$name:local -> $out/$name.tar ($(( $(date +%s) - t ))s)" >&2
}
image pause 65535:65535 "$src" ./pause
image hello 65532:65532 "$src" ./hello

# CoreDNS: its module resolved once per version (kept in the cache, as containerd's).
dns=$root/coredns-$COREDNS_VERSION
mkdir -p "$dns"
cp "$here/coredns/main.go" "$dns/main.go"
if ! grep -q "github.com/coredns/coredns v$COREDNS_VERSION" "$dns/go.mod" 2>/dev/null; then
  echo "[node-images] coredns v$COREDNS_VERSION: preparing module" >&2
  rm -f "$dns/go.mod" "$dns/go.sum"
  (cd "$dns" && GOTOOLCHAIN=local go mod init annex.local/coredns >/dev/null 2>&1 &&
    GOFLAGS=-mod=mod GOTOOLCHAIN=local go get "github.com/coredns/coredns@v$COREDNS_VERSION" >&2)
fi
(cd "$dns" && GOTOOLCHAIN=local go mod tidy >&2)
# Port 53 as a non-root user: the Pod sets net.ipv4.ip_unprivileged_port_start (a safe sysctl).
image coredns 65532:65532 "$dns" .
echo "$out"
