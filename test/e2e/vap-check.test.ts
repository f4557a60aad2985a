// `annex check --vap` against the API server on what the corpus differential does not bind:
// the ValidatingAdmissionPolicies of examples/vap/ (the ones docs/policies.md shows) with a
// Deny binding narrowed by a namespaceSelector, a Warn + Audit one, a variable and
// `reason: Forbidden`. Installed as written — each binding narrowed further to this test's
// objects and namespace — and each Deployment of examples/vap/deployments.yaml dry-run
// created; the Status (code, reason, whole message) and the warnings must be annex check's.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { readObjects } from '../../src/admission/defaults/input.js';
import { checkObject } from '../../src/cli/check.js';
import { loadVaps } from '../../src/policy/vap/index.js';
import { applyObjects } from '../cluster/annex.js';
import { until } from '../cluster/direct.js';
import { apiRequest, createNamespace, describeCluster, kubectl } from '../cluster/harness.js';

const repo = join(import.meta.dirname, '..', '..');
const LABEL = 'annex-vap-check';

/** The texts of a response's Warning headers (`299 - "text"`). */
function warningsOf(header: string | string[] | undefined): string[] {
  const all = Array.isArray(header) ? header : header ? header.split(/, (?=299 )/) : [];
  return all.map((h) => {
    const m = /^299 - "(.*)"$/.exec(h);
    return m ? m[1]!.replace(/\\(.)/g, '$1') : h;
  });
}

describeCluster('annex check --vap against the API server (examples/vap/)', () => {
  let ns = '';
  let policies: any[] = [];
  let deployments: any[] = [];
  let vapFile = '';

  beforeAll(async () => {
    ns = await createNamespace('vapcheck');
    policies = readObjects(join(repo, 'examples/vap/cluster-policies.yaml')).map((o: any) => {
      if (o.kind !== 'ValidatingAdmissionPolicyBinding') return o;
      const match = structuredClone(o.spec.matchResources ?? {});
      const names = match.namespaceSelector?.matchLabels;
      if (names?.['kubernetes.io/metadata.name'] === 'prod')
        names['kubernetes.io/metadata.name'] = ns;
      match.objectSelector = { matchLabels: { [LABEL]: ns } };
      return { ...o, spec: { ...o.spec, matchResources: match } };
    });
    deployments = readObjects(join(repo, 'examples/vap/deployments.yaml')).map((o: any) => ({
      ...o,
      metadata: {
        ...o.metadata,
        namespace: ns,
        labels: { ...o.metadata.labels, [LABEL]: ns },
      },
    }));
    const dir = mkdtempSync(join(tmpdir(), 'annex-vap-check-'));
    vapFile = join(dir, 'vaps.yaml');
    writeFileSync(vapFile, JSON.stringify({ apiVersion: 'v1', kind: 'List', items: policies }));
    await applyObjects(policies);
    // The API server loads policies asynchronously: wait until both bindings answer.
    await until('the example VAPs are enforced', async () => {
      const [web, api] = [await dryRun(deployments[0]), await dryRun(deployments[1])];
      return web.status === 403 && warningsOf(api.headers.warning).length > 0;
    });
  }, 180_000);

  afterAll(async () => {
    for (const o of [...policies].reverse())
      await kubectl(['delete', o.kind, o.metadata.name, '--ignore-not-found']);
    await kubectl(['delete', 'namespace', ns, '--wait=false']);
  });

  const dryRun = (o: any) =>
    apiRequest('POST', `/apis/apps/v1/namespaces/${ns}/deployments?dryRun=All`, { body: o });

  it('answers as the API server: status code, reason, whole message and warnings', async () => {
    const vaps = loadVaps([vapFile]);
    const seen: string[] = [];
    for (const o of deployments) {
      const r = await dryRun(o);
      const live = {
        code: r.status,
        ...(r.status >= 400
          ? { reason: r.json().reason, message: r.json().message }
          : { reason: undefined, message: undefined }),
        warnings: warningsOf(r.headers.warning),
      };
      const mine = checkObject(o, [], 'deployments.yaml', { namespace: ns, vaps });
      expect({
        code: mine.status?.code ?? 201,
        reason: mine.status?.reason,
        message: mine.status?.message,
        warnings: mine.warnings,
      }).toEqual(live);
      seen.push(`${o.metadata.name}: ${live.code} ${live.warnings.length} warning(s)`);
    }
    // The example covers a Forbidden denial and a warning on an allowed object.
    expect(seen).toEqual(['web: 403 0 warning(s)', 'api: 201 1 warning(s)']);
  }, 120_000);
});
