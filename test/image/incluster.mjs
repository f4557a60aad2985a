// The image in in-cluster mode against a real kube-apiserver (test/cluster's control
// plane): `annex install` as the operator, then the container started as the kubelet
// would — the ServiceAccount token, CA and namespace mounted at
// /var/run/secrets/kubernetes.io/serviceaccount, KUBERNETES_SERVICE_HOST/PORT set, the
// ConfigMap mounted — with the manifests' RBAC only. It must register itself, deny a bad
// name, serve the aggregated API, and drain on SIGTERM with exit 0.
// Run by scripts/image.sh (ANNEX_IMAGE_RUN: the hardened `podman run -d …` prefix).
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { ensureBinaries, pinnedVersions } from '../../dist/devcluster/binaries.js';
import { ControlPlane, freePort } from '../../dist/devcluster/control-plane.js';

const run = process.env.ANNEX_IMAGE_RUN.split(' ');
const image = process.env.ANNEX_IMAGE;
const say = (l) => console.log(`image: ${l}`);
const bins = ensureBinaries();
if ('missing' in bins) {
  say(`in-cluster check skipped: ${bins.missing}`);
  process.exit(0);
}
const cp = new ControlPlane(bins.binDir, pinnedVersions().kubernetes);
const info = await cp.start(() => {});
const w = mkdtempSync(join(tmpdir(), 'annex-incluster-'));
const sh = (cmd, args, input) =>
  execFileSync(cmd, args, { encoding: 'utf8', input, stdio: ['pipe', 'pipe', 'pipe'] });
const kubectl = (...args) => sh(info.kubectl, ['--kubeconfig', info.adminKubeconfig, ...args]);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
let cid;
try {
  sh(process.execPath, [
    'dist/cli/main.js',
    'install',
    '--kubeconfig',
    info.adminKubeconfig,
    '--image',
    image,
    '--wait',
    '0',
  ]);
  // Nothing may leave loopback: the API server reaches the container through an
  // ExternalName Service to localhost, on the port annex registers.
  kubectl('-n', 'annex-system', 'delete', 'service', 'annex');
  kubectl(
    '-n',
    'annex-system',
    'create',
    'service',
    'externalname',
    'annex',
    '--external-name=localhost',
  );
  const sa = join(w, 'serviceaccount');
  mkdirSync(sa);
  writeFileSync(
    join(sa, 'token'),
    kubectl('create', 'token', 'annex', '-n', 'annex-system', '--duration=1h').trim(),
  );
  writeFileSync(join(sa, 'ca.crt'), readFileSync(info.servingCaFile));
  writeFileSync(join(sa, 'namespace'), 'annex-system');
  for (const f of ['token', 'ca.crt', 'namespace']) chmodSync(join(sa, f), 0o644);
  const deploy = JSON.parse(
    kubectl('-n', 'annex-system', 'get', 'deployment', 'annex', '-o', 'json'),
  );
  const cm = deploy.spec.template.spec.volumes.find((v) => v.name === 'config').configMap.name;
  const config = parse(
    JSON.parse(kubectl('-n', 'annex-system', 'get', 'configmap', cm, '-o', 'json')).data[
      'annex.yaml'
    ],
  );
  const port = await freePort();
  // No kubelets here: the local metrics source. Loopback, a free port, a short drain.
  Object.assign(config.server, { host: '127.0.0.1', port, shutdownDelaySeconds: 2 });
  config.metrics = { source: 'local', scrapeIntervalSeconds: 1 };
  mkdirSync(join(w, 'config'));
  writeFileSync(join(w, 'config', 'annex.yaml'), stringify(config));
  chmodSync(join(w, 'config', 'annex.yaml'), 0o644);
  const url = new URL(info.server);
  cid = sh(run[0], [
    ...run.slice(1),
    '-v',
    `${sa}:/var/run/secrets/kubernetes.io/serviceaccount:ro`,
    '-v',
    `${join(w, 'config')}:/etc/annex/config:ro`,
    '-e',
    `KUBERNETES_SERVICE_HOST=${url.hostname}`,
    '-e',
    `KUBERNETES_SERVICE_PORT=${url.port}`,
    image,
    ...deploy.spec.template.spec.containers[0].args,
  ]).trim();
  const podman = (...a) => sh(run[0], [...run.slice(1, run.indexOf('run')), ...a]);
  const t0 = Date.now();
  for (;;) {
    const api = JSON.parse(kubectl('get', 'apiservice', 'v1beta1.metrics.annex.dev', '-o', 'json'));
    const hook = JSON.parse(
      kubectl('get', 'validatingwebhookconfiguration', 'annex-names', '-o', 'json'),
    );
    const available = api.status?.conditions?.some(
      (c) => c.type === 'Available' && c.status === 'True',
    );
    if (available && hook.webhooks.length > 0) break;
    if (Date.now() - t0 > 60_000)
      throw new Error(`annex did not register itself:\n${podman('logs', cid)}`);
    await sleep(500);
  }
  say(`in-cluster: registered itself and APIService Available ${Date.now() - t0} ms after start`);
  kubectl('create', 'namespace', 'image-check');
  kubectl('create', 'serviceaccount', 'default', '-n', 'image-check');
  let denied = '';
  for (let i = 0; i < 20 && !denied.includes('names.annex.dev'); i++) {
    try {
      kubectl('-n', 'image-check', 'create', 'deployment', 'web.front', '--image=nginx:1.27');
      throw new Error('web.front was admitted');
    } catch (e) {
      if (e.message === 'web.front was admitted') throw e;
      denied = e.stderr ?? '';
    }
    if (!denied.includes('names.annex.dev')) await sleep(250);
  }
  if (!denied.includes('admission webhook "names.annex.dev" denied the request'))
    throw new Error(`not denied: ${denied}`);
  const nodes = JSON.parse(kubectl('get', '--raw', '/apis/metrics.annex.dev/v1beta1/nodes'));
  if (nodes.kind !== 'NodeMetricsList') throw new Error(`unexpected ${nodes.kind}`);
  say(
    `in-cluster: names webhook denied web.front; ${nodes.items.length} NodeMetrics through the APIService`,
  );
  const s0 = Date.now();
  podman('stop', '-t', '30', cid);
  const code = podman('inspect', '--format', '{{.State.ExitCode}}', cid).trim();
  // annex logs to stderr: podman logs replays it there.
  const l = spawnSync(run[0], [...run.slice(1, run.indexOf('run')), 'logs', cid], {
    encoding: 'utf8',
  });
  const logs = `${l.stdout}${l.stderr}`;
  if (code !== '0' || !logs.includes('"msg":"shut down"'))
    throw new Error(`SIGTERM: exit ${code}\n${logs.slice(-2000)}`);
  say(`in-cluster: SIGTERM drained and exited 0 in ${Date.now() - s0} ms (shutdownDelaySeconds 2)`);
  sh(process.execPath, [
    'dist/cli/main.js',
    'uninstall',
    '--kubeconfig',
    info.adminKubeconfig,
    '--wait',
    '1',
  ]);
} finally {
  await cp.stop();
  rmSync(w, { recursive: true, force: true });
}
