// A shared metric group another project serves (KEDA's v1beta1.external.metrics.k8s.io) on
// the real control plane: annex, registering itself, leaves it alone and says why in
// /readyz?verbose and its log; `annex uninstall` leaves it; with
// registration.replaceOwners, annex replaces it. annex runs in the test process, reached
// through an ExternalName Service in its own namespace (nothing leaves loopback).
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Config } from '../../src/config/load.js';
import { createLogger } from '../../src/log.js';
import {
  annexGet,
  applyObjects,
  repoManifest,
  startTestAnnex,
  type TestAnnex,
} from '../cluster/annex.js';
import { runCli } from '../cluster/cli.js';
import { freePort } from '../cluster/control-plane.js';
import {
  describeCluster,
  finalizeNamespace as finalizeEmptied,
  kubectl,
  kubectlOk,
  waitForCondition,
} from '../cluster/harness.js';
import { eventually } from '../cluster/pod.js';

const KEDA = { namespace: 'keda', name: 'keda-operator-metrics-apiserver', port: 443 };
const NAME = 'v1beta1.external.metrics.k8s.io';

/** As KEDA's chart installs it: its own Service, no caBundle. */
const foreign = {
  apiVersion: 'apiregistration.k8s.io/v1',
  kind: 'APIService',
  metadata: { name: NAME, labels: { 'app.kubernetes.io/name': 'keda-operator' } },
  spec: {
    group: 'external.metrics.k8s.io',
    version: 'v1beta1',
    groupPriorityMinimum: 100,
    versionPriority: 100,
    insecureSkipTLSVerify: true,
    service: KEDA,
  },
};

const getApiService = async (name: string) => {
  const r = await kubectl(['get', 'apiservice', name, '-o', 'json', '--show-managed-fields']);
  return r.code === 0 ? JSON.parse(r.stdout) : null;
};

/** Annex's Service first (the test made it), then the namespace controller's last step. */
async function finalizeNamespace(ns: string): Promise<void> {
  await kubectl(['-n', ns, 'delete', 'service', 'annex', '--ignore-not-found']);
  await finalizeEmptied(ns);
}

/** annex in `ns`, with scaling only (no webhook on Pods), registering itself. */
async function startScalingAnnex(ns: string, replaceOwners: string[] = []) {
  // Again each time: an uninstall removes it with everything else labelled as annex's.
  await applyObjects(repoManifest('manifests/crds/externalmetrics.yaml'));
  await waitForCondition(['crd/externalmetrics.metrics.annex.dev'], 'Established');
  await kubectlOk(['create', 'namespace', ns]);
  await kubectlOk([
    '-n',
    ns,
    'create',
    'service',
    'externalname',
    'annex',
    '--external-name=localhost',
  ]);
  const out = new PassThrough();
  let log = '';
  out.on('data', (d) => (log += d));
  const annex = await startTestAnnex(
    {
      server: { port: await freePort() },
      tls: { namespace: ns },
      registration: { apply: true, replaceOwners },
      admission: {
        names: { enabled: false },
        defaults: { enabled: false } as Config['admission']['defaults'],
      },
      metrics: { enabled: false },
      scaling: { enabled: true },
      log: { level: 'info' },
    },
    [],
    { log: createLogger('info', out) },
  );
  return { annex, log: () => log };
}

describeCluster('shared metric groups: another owner is left alone unless replaced', (c) => {
  const NS1 = 'annex-sg1';
  const NS2 = 'annex-sg2';
  let running: TestAnnex | undefined;
  beforeAll(async () => {
    // Whatever earlier files left of these groups (pointing at annex-system) would be another owner here.
    for (const name of [NAME, 'v1beta2.custom.metrics.k8s.io', 'v1beta1.custom.metrics.k8s.io'])
      await kubectlOk(['delete', 'apiservice', name, '--ignore-not-found']);
    await kubectlOk(['apply', '-f', '-'], { input: JSON.stringify(foreign) });
  });
  afterAll(async () => {
    await running?.stop();
    for (const ns of [NS1, NS2]) {
      await runCli(['uninstall', '--kubeconfig', c.adminKubeconfig, '-n', ns, '--wait', '1']);
      await finalizeNamespace(ns);
    }
    await kubectl(['delete', 'apiservice', NAME, '--ignore-not-found']);
  });

  it('refuses the group KEDA serves, registers the rest, says why; uninstall leaves it', async () => {
    const { annex, log } = await startScalingAnnex(NS1);
    running = annex;
    const registrar = annex.annex.registrar!;
    // The other shared group (nobody serves it) and the webhook are registered...
    await eventually(
      async () => registrar.registered().includes('scaling/custom.metrics.k8s.io'),
      30_000,
      'custom.metrics.k8s.io registered',
    );
    expect(registrar.registered()).toContain('scaling');
    const custom = await getApiService('v1beta2.custom.metrics.k8s.io');
    expect(custom.spec.service).toEqual({ namespace: NS1, name: 'annex', port: annex.port });
    // ...KEDA's is not: not even a field of it is annex's.
    expect(registrar.registered()).not.toContain('scaling/external.metrics.k8s.io');
    const keda = await getApiService(NAME);
    expect(keda.spec.service).toEqual(KEDA);
    expect(keda.metadata.labels).toEqual(foreign.metadata.labels);
    expect(keda.metadata.managedFields.map((f: any) => f.manager)).not.toContain('annex');

    const why =
      'external.metrics.k8s.io not registered: already served by another owner (APIService v1beta1.external.metrics.k8s.io → keda/keda-operator-metrics-apiserver); remove it, or list external.metrics.k8s.io in registration.replaceOwners to replace it';
    const ready = await annexGet(annex, '/readyz?verbose');
    expect(ready.body).toContain(`[+]shared-groups ok: ${why}\n`);
    expect([ready.status, ready.body]).toEqual([
      200,
      expect.stringMatching(/readyz check passed\n$/),
    ]);
    const lines = log()
      .split('\n')
      .filter((l) => l.includes('not registered'));
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({
      level: 40,
      group: 'external.metrics.k8s.io',
      msg: why,
    });

    await annex.stop();
    running = undefined;
    const un = await runCli([
      'uninstall',
      '--kubeconfig',
      c.adminKubeconfig,
      '-n',
      NS1,
      '--wait',
      '1',
    ]);
    expect(un.code).toBe(0);
    expect(un.stdout).toContain('deleted apiservice/v1beta2.custom.metrics.k8s.io');
    expect(un.stdout).not.toContain(`apiservice/${NAME}`);
    expect((await getApiService(NAME)).spec.service).toEqual(KEDA);
    await finalizeNamespace(NS1);
  });

  it('with registration.replaceOwners, replaces it', async () => {
    const { annex, log } = await startScalingAnnex(NS2, ['external.metrics.k8s.io']);
    running = annex;
    await eventually(
      async () => annex.annex.registrar!.registered().includes('scaling/external.metrics.k8s.io'),
      30_000,
      'external.metrics.k8s.io registered',
    ).catch((e: Error) => {
      throw new Error(`${e.message}; annex's log:\n${log()}`);
    });
    expect(log()).toContain('external.metrics.k8s.io: replacing another owner');
    const taken = await getApiService(NAME);
    expect(taken.spec.service).toEqual({ namespace: NS2, name: 'annex', port: annex.port });
    await waitForCondition([`apiservice/${NAME}`], 'Available');
    // The API server now sends the group to annex: its discovery answers.
    const discovery = JSON.parse(
      await kubectlOk(['get', '--raw', '/apis/external.metrics.k8s.io/v1beta1']),
    );
    expect(discovery.groupVersion).toBe('external.metrics.k8s.io/v1beta1');
  });
});
