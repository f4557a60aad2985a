// `annex install` as a user runs it, with the test standing in for the cluster's Deployment
// controller and kubelet: once the Deployment exists, its container runs as a Pod would
// (pod.ts) with the ConfigMap's configuration, changed only by the machine's overrides —
// one list, each with its reason. Shared by the acceptance suites of the shipped install
// (install.test.ts, install-options.test.ts).
import { spawn } from 'node:child_process';
import { parse, stringify } from 'yaml';
import { cli as repoCli } from './cli.js';
import { kubectl, kubectlOk, type ClusterInfo } from './harness.js';
import { eventually, startAnnexPod, type AnnexPod } from './pod.js';

/** A configuration key this machine sets, its value, and why. */
export type Override = [path: string, value: unknown, reason: string];

/** Where the metrics come from on a control plane without real kubelets. */
export type KubeletStandIn = 'none' | 'test-kubelets';

/** What this machine forces on the shipped configuration; everything else stays as shipped. */
export function machineOverrides(
  c: ClusterInfo,
  o: { port: number; namespace: string; kubelets: KubeletStandIn },
): Override[] {
  return [
    [
      'server.host',
      '127.0.0.1',
      'no Pod network: the API server reaches annex through an ExternalName Service to localhost (nothing may leave loopback)',
    ],
    ['server.port', o.port, 'a free port: 8443 on this shared machine may be taken'],
    ['server.shutdownDelaySeconds', 1, 'a short drain, so the test ends sooner'],
    [
      'server.shutdownTimeoutSeconds',
      2,
      "the drain's deadline, which closes the API server's idle pooled connections: 2 s, not 15",
    ],
    [
      'admission.clientCA',
      c.webhookClientCaFile,
      'no kubelet mounts the ConfigMap annex-admission-client-ca: the file it would hold',
    ],
    ...(o.kubelets === 'none'
      ? ([
          [
            'metrics',
            { source: 'local', scrapeIntervalSeconds: 1, localNamespace: o.namespace },
            'no kubelets to scrape on this control plane',
          ],
        ] as Override[])
      : ([
          [
            'metrics.scrapeIntervalSeconds',
            2,
            'no real kubelet: test kubelets (test/cluster/kubelet.ts, HTTPS on 127.0.0.1) back the Node objects and step their clock per scrape; 2 s, not 15, so the two samples CPU needs come quickly',
          ],
          [
            'metrics.kubelet.timeoutSeconds',
            1.5,
            'a scrape must end within 0.9 of the shorter interval (the test kubelets answer at once)',
          ],
        ] as Override[])),
  ];
}

/** Sets `a.b.c` in a plain object, making the parents it lacks. */
export function setPath(obj: Record<string, any>, path: string, value: unknown): void {
  const keys = path.split('.');
  const last = keys.pop()!;
  keys.reduce((o, k) => (o[k] ??= {}), obj)[last] = value;
}

export interface InstalledPod {
  pod: AnnexPod;
  /** `annex install`'s exit code, once it returned. */
  code: number | null;
  /** Its stdout + stderr, whole, and as it stood when the Deployment appeared. */
  out: string;
  outBeforePod: string;
  /** The Deployment and the configuration (annex.yaml of its ConfigMap) as installed. */
  deployment: any;
  installedConfig: any;
  /** What the Pod runs with: the installed configuration plus the overrides. */
  config: any;
}

/**
 * Runs `annex install` (of `cli`'s package: its manifests/), then, once the Deployment
 * exists, annex as its Pod with the installed configuration plus `overrides`; resolves
 * when install has returned.
 */
export async function installAsPod(o: {
  cluster: ClusterInfo;
  namespace: string;
  image: string;
  overrides: Override[];
  cli?: string;
  waitSeconds?: number;
}): Promise<InstalledPod> {
  const as = { kubeconfig: o.cluster.adminKubeconfig };
  const k = (args: string[]) => kubectlOk(args, { as });
  const install = spawn(
    process.execPath,
    [
      o.cli ?? repoCli,
      'install',
      '--kubeconfig',
      o.cluster.adminKubeconfig,
      '-n',
      o.namespace,
      '--image',
      o.image,
      '--wait',
      String(o.waitSeconds ?? 90),
    ],
    { env: { ...process.env, KUBECONFIG: '' } },
  );
  let out = '';
  install.stdout.on('data', (d) => (out += d));
  install.stderr.on('data', (d) => (out += d));
  const installed = new Promise<number | null>((r) => install.on('exit', r));

  // What the Deployment controller and kubelet would do: once the Deployment exists, run
  // its container. The API server reaches it through an ExternalName Service.
  await eventually(
    async () =>
      (await kubectl(['-n', o.namespace, 'get', 'deployment', 'annex'], { as })).code === 0,
    30_000,
    'the Deployment',
  );
  const outBeforePod = out;
  const deployment = JSON.parse(
    await k(['-n', o.namespace, 'get', 'deployment', 'annex', '-o', 'json']),
  );
  await k(['-n', o.namespace, 'delete', 'service', 'annex']);
  await k([
    '-n',
    o.namespace,
    'create',
    'service',
    'externalname',
    'annex',
    '--external-name=localhost',
  ]);
  const cmName = deployment.spec.template.spec.volumes.find((v: any) => v.name === 'config')
    .configMap.name;
  const cm = JSON.parse(await k(['-n', o.namespace, 'get', 'configmap', cmName, '-o', 'json']));
  const installedConfig = parse(cm.data['annex.yaml']);
  const config = structuredClone(installedConfig);
  for (const [path, value] of o.overrides) setPath(config, path, value);
  const pod = await startAnnexPod({
    cluster: o.cluster,
    ...(o.cli ? { cli: o.cli } : {}),
    namespace: o.namespace,
    serviceAccount: 'annex',
    configYaml: stringify(config),
  });
  // annex exiting (a feature that failed to start) ends install's wait at once.
  const code = await Promise.race([
    installed,
    pod.exited.then(() => {
      install.kill();
      return installed;
    }),
  ]);
  return { pod, code, out, outBeforePod, deployment, installedConfig, config };
}
