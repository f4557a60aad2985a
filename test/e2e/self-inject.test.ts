// In a cluster annex keeps its own CA in the APIService and webhook configurations
// (tls.inject), through an identity that may patch exactly those objects.
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import {
  applyObjects,
  deleteObjects,
  ensureAnnexService,
  pointAtTestAnnex,
  repoManifest,
  startTestAnnex,
  type TestAnnex,
} from '../cluster/annex.js';
import { describeCluster, kubectl, kubectlOk, waitForCondition } from '../cluster/harness.js';
import { freePort } from '../cluster/control-plane.js';

describeCluster('tls.inject: annex injects its own caBundle', () => {
  let annex: TestAnnex;
  let objs: any[];

  beforeAll(async () => {
    await ensureAnnexService();
    // Registered first with no caBundle, pointing at the port annex will listen on.
    const port = await freePort();
    objs = pointAtTestAnnex(
      [
        ...repoManifest('apiservice/metrics-annex-dev/apiservice.yaml'),
        ...repoManifest('webhooks/validating-names.yaml'),
      ],
      port,
      '',
    );
    for (const o of objs) {
      if (o.kind === 'APIService') delete o.spec.caBundle;
      for (const w of o.webhooks ?? []) {
        delete w.clientConfig.caBundle;
        w.failurePolicy = 'Ignore'; // not under test here: keep other requests flowing
      }
    }
    await applyObjects(objs);
    annex = await startTestAnnex({
      server: { port },
      tls: {
        inject: {
          apiServices: ['v1beta1.metrics.annex.dev'],
          validatingWebhooks: ['annex-names'],
          mutatingWebhooks: [],
          crds: [],
        },
      },
    });
  });
  afterAll(async () => {
    if (objs) await deleteObjects(objs);
    await annex?.stop();
  });

  it('fills caBundle at start, as field manager annex, and the APIService becomes Available', async () => {
    const api = JSON.parse(
      await kubectlOk([
        'get',
        'apiservice',
        'v1beta1.metrics.annex.dev',
        '-o',
        'json',
        '--show-managed-fields',
      ]),
    );
    expect(api.spec.caBundle).toBe(annex.caBundle);
    expect(api.metadata.managedFields.map((f: any) => f.manager)).toContain('annex');
    const hook = JSON.parse(
      await kubectlOk(['get', 'validatingwebhookconfiguration', 'annex-names', '-o', 'json']),
    );
    expect(hook.webhooks[0].clientConfig.caBundle).toBe(annex.caBundle);
    await waitForCondition(['apiservice/v1beta1.metrics.annex.dev'], 'Available');
  });

  it('starts although a target is missing, and injects it once it exists (a CRD applied after annex)', async () => {
    const crd = 'latecomers.inject.annex.dev';
    const lines = new PassThrough();
    let log = '';
    lines.on('data', (d) => (log += d));
    const late = await startTestAnnex(
      {
        tls: {
          inject: { apiServices: [], validatingWebhooks: [], mutatingWebhooks: [], crds: [crd] },
        },
      },
      [],
      { log: createLogger('info', lines) },
    );
    try {
      // main before this: startAnnex threw "cannot inject the caBundle" and annex exited.
      expect(log).toContain('caBundle injection failed (tls.inject); retrying');
      await applyObjects([
        {
          apiVersion: 'apiextensions.k8s.io/v1',
          kind: 'CustomResourceDefinition',
          metadata: { name: crd },
          spec: {
            group: 'inject.annex.dev',
            scope: 'Namespaced',
            names: { plural: 'latecomers', singular: 'latecomer', kind: 'Latecomer' },
            versions: [
              {
                name: 'v1',
                served: true,
                storage: true,
                schema: { openAPIV3Schema: { type: 'object' } },
              },
            ],
            conversion: {
              strategy: 'Webhook',
              webhook: {
                conversionReviewVersions: ['v1'],
                clientConfig: { url: `https://127.0.0.1:${late.port}/convert/latecomers` },
              },
            },
          },
        },
      ]);
      // The queue's backoff doubles from 0.5 s to at most 30 s: well within a minute.
      const deadline = Date.now() + 60_000;
      let bundle = '';
      while (Date.now() < deadline) {
        const r = await kubectl([
          'get',
          'crd',
          crd,
          '-o',
          'jsonpath={.spec.conversion.webhook.clientConfig.caBundle}',
        ]);
        bundle = r.stdout.trim();
        if (bundle === late.caBundle) break;
        await new Promise((r) => setTimeout(r, 250));
      }
      expect(bundle).toBe(late.caBundle);
      // One line per distinct error, not one a try.
      expect(log.split('caBundle injection failed').length - 1).toBeLessThanOrEqual(2);
      expect(log).toContain(`"name":"${crd}","changed":true`);
    } finally {
      await kubectl(['delete', 'crd', crd, '--ignore-not-found', '--wait=false']);
      await late.stop();
    }
  });
});
