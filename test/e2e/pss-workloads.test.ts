// The Pod Security Standards at workload level, end to end: annex's `podSecurity` rule
// (examples/pod-security/<level>.yaml, on annex's webhook) refuses a Deployment exactly
// when PodSecurity admission would refuse the Pods its template makes, with the same text.
// Each generated Pod (test/fixtures/pss-corpus.ts) is dry-run-created in a namespace
// enforcing <level>:latest, and wrapped in a Deployment dry-run-created through annex.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parse } from 'yaml';
import {
  applyObjects,
  deleteObjects,
  ensureAnnexService,
  featureRegistrations,
  installPolicyCrd,
  startTestAnnex,
  type TestAnnex,
} from '../cluster/annex.js';
import { apiRequest, createNamespace, describeCluster, kubectl } from '../cluster/harness.js';
import { eventually } from '../cluster/kubelet.js';
import { pssPods } from '../fixtures/pss-corpus.js';
import { pool } from '../cluster/pool.js';

const COUNT = Number(process.env.ANNEX_PSS_WORKLOADS ?? 400);
const repo = join(import.meta.dirname, '..', '..');
const TEXT = 'violates PodSecurity "';

const deployment = (pod: any) => {
  const labels = { app: 'pss' };
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: pod.metadata.name },
    spec: {
      replicas: 1,
      selector: { matchLabels: labels },
      template: {
        metadata: { ...pod.metadata, name: undefined, labels },
        spec: pod.spec,
      },
    },
  };
};

for (const level of ['baseline', 'restricted'])
  describeCluster(`Pod Security Standards on workloads, through annex (${level})`, () => {
    let enforced = '';
    let policed = '';
    let annex: TestAnnex | undefined;
    let registered: any[] = [];
    const policy = parse(
      readFileSync(join(repo, 'examples', 'pod-security', `${level}.yaml`), 'utf8'),
    );

    beforeAll(async () => {
      enforced = await createNamespace('pss-enf');
      await kubectl([
        'label',
        'namespace',
        enforced,
        `pod-security.kubernetes.io/enforce=${level}`,
      ]);
      policed = await createNamespace('pss-wl');
      await installPolicyCrd();
      annex = await startTestAnnex({
        admission: { names: { enabled: false }, defaults: { enabled: false } },
        metrics: { enabled: false },
        policy: { enabled: true },
      } as any);
      registered = featureRegistrations(annex, 'policy', {
        webhooks: ['policies.annex.dev'],
        namespace: policed,
      }).filter((o) => o.kind !== 'APIService');
      await ensureAnnexService();
      await applyObjects(registered);
      policy.spec.match.namespaces = [policed];
      await applyObjects([policy]);
      // Until annex's webhook is called for Deployments here, creates pass.
      await eventually(async () => {
        const r = await apiRequest(
          'POST',
          `/apis/apps/v1/namespaces/${policed}/deployments?dryRun=All`,
          {
            body: deployment({
              metadata: { name: 'probe' },
              spec: {
                containers: [
                  { name: 'c', image: 'busybox', securityContext: { privileged: true } },
                ],
              },
            }),
          },
        );
        return r.status === 422 && String(r.json().message).includes(TEXT) ? true : undefined;
      }, 60_000);
    }, 180_000);

    afterAll(async () => {
      await kubectl(['delete', 'admissionpolicy', policy.metadata.name, '--ignore-not-found']);
      await deleteObjects(registered);
      for (const ns of [enforced, policed])
        if (ns) await kubectl(['delete', 'namespace', ns, '--wait=false']);
      await annex?.stop();
    });

    it('refuses exactly the Deployments whose Pods PodSecurity refuses, in its words', async () => {
      const pods = pssPods(COUNT, 4242);
      const mismatches: string[] = [];
      let compared = 0;
      let refused = 0;
      let invalid = 0;
      await pool(pods, async (pod) => {
        const live = await apiRequest('POST', `/api/v1/namespaces/${enforced}/pods?dryRun=All`, {
          body: { ...pod, metadata: { ...pod.metadata, namespace: enforced } },
        });
        const wl = await apiRequest(
          'POST',
          `/apis/apps/v1/namespaces/${policed}/deployments?dryRun=All`,
          { body: deployment(pod) },
        );
        const text = (r: typeof live) => {
          const m = r.status === 201 ? '' : String(r.json().message ?? r.body);
          return { m, at: m.indexOf(TEXT) };
        };
        const p = text(live);
        const d = text(wl);
        // Refused by validation (the Pod's or the Deployment's own): not PodSecurity's to judge.
        if ((live.status === 422 && p.at < 0) || (wl.status === 422 && d.at < 0))
          return void invalid++;
        compared++;
        const want = p.at < 0 ? '' : p.m.slice(p.at);
        const got = d.at < 0 ? '' : d.m.slice(d.at);
        if (want) refused++;
        if (want !== got)
          mismatches.push(
            `${pod.metadata.name}: PodSecurity ${live.status} "${want}" annex ${wl.status} "${got}"`,
          );
      });
      console.error(
        `pss-workloads (${level}): ${pods.length} Pods, ${invalid} refused by validation, ${compared} compared (${refused} refused by PodSecurity), ${mismatches.length} mismatches`,
      );
      for (const m of mismatches.slice(0, 10)) console.error(`pss-workloads (${level}): ${m}`);
      expect(compared).toBeGreaterThan(COUNT / 2);
      expect(refused).toBeGreaterThan(0);
      expect(compared - refused).toBeGreaterThan(0);
      expect(mismatches).toEqual([]);
    }, 300_000);
  });
