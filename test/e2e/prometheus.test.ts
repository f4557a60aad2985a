// annex's own /metrics: behind delegated authn/authz like kube-apiserver's, and it says
// when a kubelet cannot be scraped (the node is then missing from the list).
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { freePort } from '../cluster/control-plane.js';
import { annexGet, startTestAnnex, type TestAnnex } from '../cluster/annex.js';
import { describeCluster, type ClusterInfo } from '../cluster/harness.js';
import { createNode, eventually } from '../cluster/kubelet.js';

describeCluster("annex's /metrics", (c: ClusterInfo) => {
  let annex: TestAnnex;
  const admin = [join(c.dir, 'admin.crt'), join(c.dir, 'admin.key')] as const;
  const jane = [join(c.dir, 'user.crt'), join(c.dir, 'user.key')] as const;

  beforeAll(async () => {
    // A Node whose kubelet port has nothing behind it.
    await createNode('unreachable-node', await freePort(), { cpu: '2', memory: '4Gi' });
    annex = await startTestAnnex({
      metrics: {
        source: 'kubelet',
        scrapeIntervalSeconds: 1,
        kubelet: { timeoutSeconds: 0.5 } as never,
      },
    });
  });
  afterAll(async () => {
    await annex?.stop();
  });

  it('counts scrape failures per node, and leaves the failed node out of the list', async () => {
    const body = await eventually(async () => {
      const r = await annexGet(annex, '/metrics', admin);
      expect(r.status).toBe(200);
      expect(r.body).toMatch(
        /^annex_metrics_scrape_failures_total\{node="unreachable-node"\} [1-9]/m,
      );
      return r.body;
    });
    expect(body).toContain('# TYPE annex_metrics_scrape_duration_seconds histogram');
    const list = JSON.parse(
      (await annexGet(annex, '/apis/metrics.annex.dev/v1beta1/nodes', admin)).body,
    );
    expect(list.items.map((n: any) => n.metadata.name)).not.toContain('unreachable-node');
  });

  it('is authorized with a SubjectAccessReview for the path', async () => {
    const r = await annexGet(annex, '/metrics', jane);
    expect(r.status).toBe(403);
    expect(JSON.parse(r.body)).toMatchObject({
      kind: 'Status',
      reason: 'Forbidden',
      message: 'forbidden: User "jane" cannot get path "/metrics"',
    });
  });
});
