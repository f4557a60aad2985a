// Differential test: a generated corpus of names, sent as metadata.name and as
// metadata.generateName to one kind per name-rule carrier; annex's validateObjectMeta must
// give the real API server's verdict and its exact message. A generated name is compared by
// shape: the server's must be the prefix cut to 58 bytes plus 5 characters of its alphabet,
// and annex is then asked about that same suffix.
import { Agent } from 'node:https';
import { expect, it } from 'vitest';
import { causeReason, goString, validateObjectMeta } from '../../src/admission/names/index.js';
import { invalidStatus } from '../../src/admission/verdict.js';
import { apiRequest, createNamespace, describeCluster } from '../cluster/harness.js';
import { generatedNameCorpus } from '../fixtures/name-corpus.js';

const pod = { containers: [{ name: 'c', image: 'busybox' }], restartPolicy: 'Never' };
const template = { metadata: { labels: { app: 'x' } }, spec: { ...pod, restartPolicy: 'Always' } };

/** One kind per carrier: how it is created, and a body its own validation accepts. */
const carriers = [
  {
    carrier: 'subdomain',
    group: '',
    apiVersion: 'v1',
    kind: 'ConfigMap',
    path: 'api/v1/NS/configmaps',
    body: {},
  },
  {
    carrier: 'label',
    group: '',
    apiVersion: 'v1',
    kind: 'Service',
    path: 'api/v1/NS/services',
    body: { spec: { type: 'ExternalName', externalName: 'localhost' } },
  },
  {
    carrier: 'label + label value',
    group: '',
    apiVersion: 'v1',
    kind: 'Namespace',
    path: 'api/v1/namespaces',
    body: {},
  },
  {
    carrier: 'path segment, generateName as a name',
    group: 'rbac.authorization.k8s.io',
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'Role',
    path: 'apis/rbac.authorization.k8s.io/v1/NS/roles',
    body: {},
  },
  {
    carrier: 'path segment',
    group: 'policy',
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    path: 'apis/policy/v1/NS/poddisruptionbudgets',
    body: {},
  },
  {
    carrier: 'subdomain ≤ 52',
    group: 'batch',
    apiVersion: 'batch/v1',
    kind: 'CronJob',
    path: 'apis/batch/v1/NS/cronjobs',
    body: { spec: { schedule: '* * * * *', jobTemplate: { spec: { template: { spec: pod } } } } },
  },
  {
    carrier: 'subdomain + job-name label',
    group: 'batch',
    apiVersion: 'batch/v1',
    kind: 'Job',
    path: 'apis/batch/v1/NS/jobs',
    body: { spec: { template: { spec: pod } } },
  },
  {
    carrier: 'subdomain, generateName ignored',
    group: '',
    apiVersion: 'v1',
    kind: 'ReplicationController',
    path: 'api/v1/NS/replicationcontrollers',
    body: { spec: { selector: { app: 'x' }, template } },
  },
] as const;

const SUFFIX = /^[bcdfghjklmnpqrstvwxz2456789]{5}$/;

describeCluster('name rules: annex vs the real API server, per carrier', () => {
  const corpus = generatedNameCorpus();

  it(`draws at least 1,000 names with every boundary (${corpus.length})`, () => {
    expect(corpus.length).toBeGreaterThanOrEqual(1000);
    expect(corpus).toContain('');
    for (const n of [51, 52, 53, 62, 63, 64, 252, 253, 254]) {
      expect(corpus.some((s) => Buffer.byteLength(s) === n)).toBe(true);
    }
    for (const s of ['.', '..', '-', 'a-', '-a', 'a.', '.a']) expect(corpus).toContain(s);
    expect(corpus.some((s) => /[A-Z]/.test(s))).toBe(true);
    expect(corpus.some((s) => Buffer.byteLength(s) > s.length)).toBe(true);
  });

  const agent = new Agent({ keepAlive: true, maxSockets: 8 });
  let ns = '';
  const totals: string[] = [];

  for (const c of carriers) {
    for (const field of ['name', 'generateName'] as const) {
      it(`agrees on ${c.kind} (${c.carrier}) × metadata.${field}`, async () => {
        ns ||= await createNamespace('names');
        const { apiVersion } = c;
        const path = `/${c.path.replace('NS', `namespaces/${ns}`)}?dryRun=All`;
        const mismatches: string[] = [];
        let denied = 0;
        const queue = [...corpus];
        await Promise.all(
          Array.from({ length: 8 }, async () => {
            for (let value = queue.shift(); value !== undefined; value = queue.shift()) {
              const meta = { [field]: value };
              const r = await apiRequest('POST', path, {
                body: { apiVersion, kind: c.kind, metadata: meta, ...c.body },
                agent,
              });
              if (r.status !== 201 && r.status !== 422) {
                mismatches.push(`${JSON.stringify(value)}: HTTP ${r.status}: ${r.body}`);
                continue;
              }
              const j = r.json();
              const serverName: string =
                (r.status === 201 ? j.metadata?.name : j.details?.name) ?? '';
              // Compared by shape: the server's random suffix, then annex is told it.
              let suffix = 'bcdfg';
              if (field === 'generateName' && value !== '') {
                suffix = serverName.slice(-5);
                const base = goString(Buffer.from(value).subarray(0, 58));
                if (!SUFFIX.test(suffix) || serverName !== base + suffix) {
                  mismatches.push(
                    `${JSON.stringify(value)}: generated ${JSON.stringify(serverName)}`,
                  );
                  continue;
                }
              }
              const ours = validateObjectMeta(c.group, c.kind, meta, suffix);
              const annex =
                ours.errors.length === 0
                  ? null
                  : invalidStatus(
                      c.group,
                      c.kind,
                      ours.nameBytes,
                      ours.errors.map((e) => ({
                        field: e.field,
                        message: e.cause,
                        reason: causeReason(e.type),
                      })),
                    );
              const server = r.status === 201 ? null : j;
              if (server !== null) denied++;
              const same =
                server?.message === annex?.message &&
                JSON.stringify(server?.details?.causes ?? null) ===
                  JSON.stringify(annex?.details?.causes ?? null) &&
                (server === null || server.details.name === annex?.details?.name);
              if (!same) {
                mismatches.push(
                  `${JSON.stringify(value)}\n  server: ${server?.message ?? 'created'} ${JSON.stringify(server?.details ?? null)}\n  annex:  ${annex?.message ?? 'created'} ${JSON.stringify(annex?.details ?? null)}`,
                );
              }
            }
          }),
        );
        if (process.env.ANNEX_DIFF_DUMP)
          console.log(`MISMATCHES ${c.kind} ${field}\n${mismatches.join('\n')}`);
        expect(mismatches.slice(0, 5).join('\n')).toBe('');
        // The corpus exercises both outcomes for every carrier and field.
        expect(denied).toBeGreaterThan(40);
        expect(corpus.length - denied).toBeGreaterThan(40);
        const line = `names differential ${c.kind} metadata.${field}: ${corpus.length} names, ${denied} denied, 0 mismatches`;
        totals.push(line);
        console.log(line);
      });
    }
  }

  it('prints the totals', () => {
    agent.destroy();
    console.log(
      `names differential: ${totals.length} carrier × field runs, ${totals.length * corpus.length} names checked, 0 mismatches`,
    );
    expect(totals).toHaveLength(carriers.length * 2);
  });
});
