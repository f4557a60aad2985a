#!/usr/bin/env bash
# Builds the node's images offline (no registry is reachable here): the Pod sandbox
# (`localhost/annex-pause:local`) and a tiny workload (`localhost/annex-hello:local`), each
# one static Go binary (devcluster/node-images/) in a one-layer image, written by hand as a
# docker-archive tar that `ctr -n k8s.io images import` reads. No podman, no network.
# Cached by a hash of the sources and the Go version:
#   ${ANNEX_K8S_CACHE:-~/.cache/annex/k8s}/node-images-<hash>/{pause,hello}.tar
# Prints that directory on stdout.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$here/node-images
key=$( (go version; cd "$src" && find . -type f | sort | xargs sha256sum) | sha256sum | cut -c1-12)
out=${ANNEX_K8S_CACHE:-$HOME/.cache/annex/k8s}/node-images-$key
if [[ -f $out/pause.tar && -f $out/hello.tar ]]; then
  echo "[node-images] cached: $out" >&2
  echo "$out"; exit 0
fi
mkdir -p "$out"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
sha() { sha256sum "$1" | cut -d' ' -f1; }

image() { # name, user
  local name=$1 user=$2 d=$work/$1
  mkdir -p "$d/rootfs" "$d/archive"
  (cd "$src" && CGO_ENABLED=0 GOFLAGS=-mod=mod GOTOOLCHAIN=local go build -trimpath -ldflags "-s -w" -o "$d/rootfs/$name" "./$name")
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
  echo "[node-images] localhost/annex-$name:local -> $out/$name.tar" >&2
}
image pause 65535:65535
image hello 65532:65532
echo "$out"
