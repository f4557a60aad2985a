// In a cluster annex keeps its own CA in the APIService and webhook configurations
// (tls.inject), through an identity that may patch exactly those objects.
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  applyObjects,
  deleteObjects,
  ensureAnnexService,
  pointAtTestAnnex,
  repoManifest,
  startTestAnnex,
  type TestAnnex,
} from '../cluster/annex.js';
import { describeCluster, kubectlOk, waitForCondition } from '../cluster/harness.js';
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
});
