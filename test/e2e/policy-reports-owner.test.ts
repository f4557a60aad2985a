// wgpolicyk8s.io already served by another owner (Kyverno's PolicyReport CRD) on the real
// control plane: annex, registering itself, leaves the group alone, says so once in its
// log and in /readyz?verbose, and serves the same reports under its own group,
// reports.annex.dev. annex runs in the test process, reached through an ExternalName
// Service in its own namespace (nothing leaves loopback).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parse } from 'yaml';
import { createLogger } from '../../src/log.js';
import {
  annexGet,
  applyObjects,
  installPolicyCrd,
  startTestAnnex,
  type TestAnnex,
} from '../cluster/annex.js';
import { deploymentIn } from '../cluster/check-live.js';
import { runCli } from '../cluster/cli.js';
import { freePort } from '../cluster/control-plane.js';
import {
  describeCluster,
  finalizeNamespace,
  kubectl,
  kubectlOk,
  waitForCondition,
} from '../cluster/harness.js';
import { eventually } from '../cluster/pod.js';

const repo = join(import.meta.dirname, '..', '..');
const CRD = 'policyreports.wgpolicyk8s.io';

/** Kyverno's CRD in miniature: the group and kind, stored in etcd. */
const kyvernoCrd = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: CRD },
  spec: {
    group: 'wgpolicyk8s.io',
    names: { kind: 'PolicyReport', plural: 'policyreports', listKind: 'PolicyReportList' },
    scope: 'Namespaced',
    versions: [
      {
        name: 'v1alpha2',
        served: true,
        storage: true,
        schema: {
          openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
        },
      },
    ],
  },
};

describeCluster('PolicyReports when wgpolicyk8s.io has another owner', (c) => {
  const NS = 'annex-polr-owner';
  let annex: TestAnnex | undefined;
  let log = '';
  let app = '';

  beforeAll(async () => {
    await kubectl(['delete', 'apiservice', 'v1alpha2.wgpolicyk8s.io', '--ignore-not-found']);
    await applyObjects([kyvernoCrd]);
    await waitForCondition([`crd/${CRD}`], 'Established');
    await installPolicyCrd();
    await kubectlOk(['create', 'namespace', NS]);
    await kubectlOk([
      '-n',
      NS,
      'create',
      'service',
      'externalname',
      'annex',
      '--external-name=localhost',
    ]);
    app = `polr-app-${Date.now().toString(36)}`;
    await kubectlOk(['create', 'namespace', app]);
    await applyObjects([deploymentIn(app, 'web', { image: 'nginx:latest' })]);
    const out = new PassThrough();
    out.on('data', (d) => (log += d));
    annex = await startTestAnnex(
      {
        server: { port: await freePort() },
        tls: { namespace: NS },
        registration: { apply: true },
        admission: { names: { enabled: false }, defaults: { enabled: false } },
        metrics: { enabled: false },
        policy: { enabled: true, native: false, reports: { enabled: true, resyncSeconds: 10 } },
        log: { level: 'info' },
      } as any,
      [],
      { log: createLogger('info', out) },
    );
  }, 120_000);

  afterAll(async () => {
    await kubectl(['delete', 'admissionpolicies', `pinned-images-${app}`, '--wait=false']);
    await annex?.stop();
    await runCli(['uninstall', '--kubeconfig', c.adminKubeconfig, '-n', NS, '--wait', '1']);
    await kubectl(['-n', NS, 'delete', 'service', 'annex', '--ignore-not-found']);
    await finalizeNamespace(NS);
    await kubectl(['delete', 'namespace', app, '--wait=false']);
    await kubectl(['delete', 'crd', CRD, '--ignore-not-found']);
  });

  it("leaves Kyverno's group alone, says so, and serves the reports under reports.annex.dev", async () => {
    const registrar = annex!.annex.registrar!;
    await eventually(
      async () => registrar.registered().includes('policy'),
      30_000,
      'policy registered',
    );
    expect(registrar.registered()).not.toContain('policy/wgpolicyk8s.io');
    const crdApiService = JSON.parse(
      await kubectlOk(['get', 'apiservice', 'v1alpha2.wgpolicyk8s.io', '-o', 'json']),
    );
    expect(crdApiService.spec.service ?? null).toBeNull(); // still the API server's (the CRD)

    const why =
      'wgpolicyk8s.io not registered: already served by another owner (APIService v1alpha2.wgpolicyk8s.io → the API server itself); remove it, or list wgpolicyk8s.io in registration.replaceOwners to replace it';
    const ready = await annexGet(annex!, '/readyz?verbose');
    expect(ready.body).toContain(`[+]shared-groups ok: ${why}\n`);
    expect(log.split('\n').filter((l) => l.includes('not registered'))).toHaveLength(1);

    await waitForCondition(['apiservice/v1alpha2.reports.annex.dev'], 'Available');
    const policy = parse(readFileSync(join(repo, 'policies', 'pinned-images.yaml'), 'utf8'));
    policy.metadata.name = `pinned-images-${app}`;
    policy.spec.match.namespaces = [app];
    await applyObjects([policy]);
    const table = () => kubectlOk(['get', 'policyreports.reports.annex.dev', '-n', app]);
    const counts = /annex-policies\s+1\s+1\s+0\s+0\s+0\s/;
    await eventually(
      async () => counts.test(await table()),
      30_000,
      'the report, reports.annex.dev',
    );
    expect(await table()).toMatch(/^NAME\s+PASS\s+FAIL\s+WARN\s+ERROR\s+SKIP\s+AGE\n/);
    // `policyreports` is still Kyverno's (its CRD, in etcd): annex wrote nothing there.
    const theirs = await kubectlOk([
      'get',
      'policyreports.wgpolicyk8s.io',
      '-n',
      app,
      '-o',
      'name',
    ]);
    expect(theirs.trim()).toBe('');
  });
});
