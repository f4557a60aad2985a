// Background scans and PolicyReports against the real kube-apiserver: objects that already
// break a policy exist before it; once it is applied, `kubectl get policyreports` shows them
// failing (served by annex through the aggregation layer, nothing in etcd); fixing an object
// turns its result to pass; the report is readable by a viewer of its namespace only.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parse } from 'yaml';
import {
  annexGet,
  applyObjects,
  deleteObjects,
  ensureAnnexService,
  featureRegistrations,
  installPolicyCrd,
  pointAtTestAnnex,
  startTestAnnex,
  type TestAnnex,
} from '../cluster/annex.js';
import { deploymentIn } from '../cluster/check-live.js';
import {
  createNamespace,
  describeCluster,
  kubectl,
  kubectlOk,
  waitForCondition,
  type ClusterInfo,
} from '../cluster/harness.js';
import { eventually } from '../cluster/kubelet.js';

const repo = join(import.meta.dirname, '..', '..');

describeCluster('PolicyReports from background scans, live', (c: ClusterInfo) => {
  let ns = '';
  let other = '';
  let a: TestAnnex;
  let b: TestAnnex;
  let aStopped = false;
  let registered: any[] = [];
  const viewer = 'report-viewer';

  /** The demo policy, limited to the test namespace so no other test meets it. */
  const pinned = () => {
    const p = parse(readFileSync(join(repo, 'policies', 'pinned-images.yaml'), 'utf8'));
    p.metadata.name = `pinned-images-${ns}`;
    p.spec.match.namespaces = [ns];
    return p;
  };
  const report = async () =>
    JSON.parse(await kubectlOk(['get', 'policyreports', '-n', ns, 'annex-policies', '-o', 'json']));
  const resultOf = (r: any, name: string) =>
    r.results.find((x: any) => x.resources[0].name === name && x.rule === 'containers');

  beforeAll(async () => {
    ns = await createNamespace('reports');
    other = await createNamespace('reports-other');
    await installPolicyCrd();
    // Already there, before any policy: one breaks it, one does not, in two namespaces.
    await applyObjects([
      deploymentIn(ns, 'web', { image: 'nginx:latest' }),
      deploymentIn(ns, 'api', { image: 'nginx:1.27' }),
      deploymentIn(other, 'web', { image: 'nginx:latest' }),
    ]);
    const settings = {
      admission: { names: { enabled: false }, defaults: { enabled: false } },
      metrics: { enabled: false },
      policy: { enabled: true, native: false, reports: { enabled: true, resyncSeconds: 10 } },
    } as any;
    a = await startTestAnnex(settings);
    // A second replica: its own caches, its own scans, the same reports.
    b = await startTestAnnex({ ...settings, tls: { dir: a.certsDir } });
    registered = featureRegistrations(a, 'policy', {
      webhooks: ['policies.annex.dev'],
      namespace: ns,
    });
    await ensureAnnexService();
    await applyObjects(registered);
    await waitForCondition(['apiservice/v1alpha2.wgpolicyk8s.io'], 'Available');
    await kubectlOk([
      'create',
      'role',
      viewer,
      '-n',
      ns,
      '--verb=get,list,watch',
      '--resource=policyreports.wgpolicyk8s.io',
    ]);
    await kubectlOk([
      'create',
      'rolebinding',
      viewer,
      '-n',
      ns,
      `--role=${viewer}`,
      '--user=alice',
    ]);
  }, 120_000);

  afterAll(async () => {
    await kubectl(['delete', 'admissionpolicies', `pinned-images-${ns}`, '--wait=false']);
    await deleteObjects(registered);
    await kubectl(['delete', 'namespace', ns, other, '--wait=false']);
    await b?.stop();
    if (!aStopped) await a?.stop();
  });

  it('a policy applied to a namespace that already breaks it: the report shows the failures', async () => {
    await applyObjects([pinned()]);
    const table = await eventually(async () => {
      const out = await kubectlOk(['get', 'policyreports', '-n', ns]);
      return /annex-policies\s+3\s+1\s+0\s+0\s+0\s+\S+/.test(out) ? out : undefined;
    }, 30_000);
    expect(table.split('\n')[0]).toMatch(/^NAME\s+PASS\s+FAIL\s+WARN\s+ERROR\s+SKIP\s+AGE$/);

    const r = parse(
      await kubectlOk(['get', 'policyreports', '-n', ns, 'annex-policies', '-o', 'yaml']),
    );
    expect(r.apiVersion).toBe('wgpolicyk8s.io/v1alpha2');
    expect(r.summary).toEqual({ pass: 3, fail: 1, warn: 0, error: 0, skip: 0 });
    // containers and init-containers for each of the two Deployments.
    expect(r.results).toHaveLength(4);
    expect(resultOf(r, 'web')).toMatchObject({
      policy: `pinned-images-${ns}`,
      result: 'fail',
      source: 'annex',
      resources: [{ apiVersion: 'apps/v1', kind: 'Deployment', namespace: ns, name: 'web' }],
    });
    expect(resultOf(r, 'web').message).toContain('"nginx:latest"');
    expect(resultOf(r, 'api').result).toBe('pass');

    // The policy names only ns: the other namespace has no report.
    const names = async (namespace: string, ...more: string[]) =>
      (await kubectlOk(['get', 'policyreports', '-n', namespace, '-o', 'name', ...more])).trim();
    expect(await names(other)).toBe('');
    // -A lists it, label selectors select it, and nothing of it is in etcd (no CRD serves it).
    expect(await kubectlOk(['get', 'policyreports', '-A'])).toContain(ns);
    expect(await names(ns, '-l', 'app.kubernetes.io/managed-by=annex')).toContain('annex-policies');
    expect(await names(ns, '-l', 'app.kubernetes.io/managed-by=other')).toBe('');
    expect((await kubectl(['get', 'crd', 'policyreports.wgpolicyk8s.io'])).code).not.toBe(0);
  });

  it('a PolicyException turns the exempted result to skip, naming it; a scan records no Event', async () => {
    const exception = {
      apiVersion: 'policy.annex.dev/v1alpha1',
      kind: 'PolicyException',
      metadata: { name: 'legacy-web', namespace: ns },
      spec: {
        reason: 'web moves to a pinned image next sprint',
        exceptions: [{ policyName: `pinned-images-${ns}`, ruleNames: ['containers'] }],
        match: { any: [{ resources: { kinds: ['apps/Deployment'], names: ['web'] } }] },
      },
    };
    await applyObjects([exception]);
    const r = await eventually(async () => {
      const now = await report();
      return resultOf(now, 'web')?.result === 'skip' ? now : undefined;
    }, 30_000);
    expect(resultOf(r, 'web')).toMatchObject({
      message: `exempted by PolicyException ${ns}/legacy-web`,
      properties: { exception: `${ns}/legacy-web` },
    });
    expect(r.summary).toEqual({ pass: 3, fail: 0, warn: 0, error: 0, skip: 1 });
    const events = JSON.parse(
      await kubectlOk([
        'get',
        'events.events.k8s.io',
        '-n',
        ns,
        '--field-selector',
        'reason=PolicyExempted',
        '-o',
        'json',
      ]),
    );
    expect(events.items).toEqual([]);
    // Gone: the failure is back, for the test below to fix.
    await kubectlOk(['delete', 'policyexception', 'legacy-web', '-n', ns]);
    await eventually(async () => {
      const now = await report();
      return resultOf(now, 'web')?.result === 'fail' ? true : undefined;
    }, 30_000);
  });

  it('an object changed to comply: its result becomes pass, and a watcher sees it', async () => {
    const watch = spawn(
      c.kubectl,
      [
        '--kubeconfig',
        c.adminKubeconfig,
        'get',
        'policyreports',
        '-n',
        ns,
        '-w',
        '--output-watch-events',
        '-o',
        'json',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let seen = '';
    watch.stdout.on('data', (d) => (seen += d));
    try {
      await eventually(async () => (seen.includes('"ADDED"') ? true : undefined), 15_000);
      await kubectlOk(['set', 'image', '-n', ns, 'deployment/web', 'c=nginx:1.27']);
      const r = await eventually(async () => {
        const now = await report();
        return resultOf(now, 'web')?.result === 'pass' ? now : undefined;
      }, 30_000);
      expect(r.summary).toEqual({ pass: 4, fail: 0, warn: 0, error: 0, skip: 0 });
      await eventually(async () => (seen.includes('"MODIFIED"') ? true : undefined), 15_000);
    } finally {
      watch.kill();
    }
    // The scan wrote nothing to the object: only our image change moved its generation.
    const web = JSON.parse(await kubectlOk(['get', 'deployment', 'web', '-n', ns, '-o', 'json']));
    expect(web.metadata.generation).toBe(2);
  });

  it("a namespace viewer reads its namespace's report, not another's; a stranger reads none", async () => {
    const mine = await kubectl(['get', 'policyreports', '-n', ns, '--as=alice']);
    expect(mine.code).toBe(0);
    expect(mine.stdout).toContain('annex-policies');
    const elsewhere = await kubectl(['get', 'policyreports', '-n', other, '--as=alice']);
    expect(elsewhere.code).not.toBe(0);
    expect(elsewhere.stderr).toMatch(/forbidden/i);
    const all = await kubectl(['get', 'policyreports', '-A', '--as=alice']);
    expect(all.code).not.toBe(0);
    const stranger = await kubectl(['get', 'policyreports', '-n', ns, '--as=bob']);
    expect(stranger.code).not.toBe(0);
    expect(stranger.stderr).toMatch(/forbidden/i);
  });

  it('/readyz?verbose names the scan caches and their sizes', async () => {
    const line = await eventually(async () => {
      const r = await annexGet(a, '/readyz?verbose');
      return r.body
        .split('\n')
        .find((l) => l.startsWith('[+]policy ') && l.includes('scan caches'));
    }, 15_000);
    // The policy matches Pods and six workload kinds: each cached, with its count.
    expect(line).toMatch(/scan caches: .*apps\/deployments \d+/);
    expect(line).toMatch(/\bpods \d+/);
  });

  // Last: it stops replica A.
  it('a second replica serves the same report when the first is gone', async () => {
    const strip = (r: any) => ({
      summary: r.summary,
      results: r.results.map(({ timestamp: _, ...x }: any) => x),
    });
    const fromA = strip(await report());
    const toB = pointAtTestAnnex(
      structuredClone(registered.filter((o) => o.kind === 'APIService')),
      b.port,
      b.caBundle,
    );
    await applyObjects(toB);
    await a.stop();
    aStopped = true;
    // Whoever answers now is B (A is gone): its report equals A's, timestamps aside.
    const fromB = await eventually(async () => {
      const r = await kubectl(['get', 'policyreports', '-n', ns, 'annex-policies', '-o', 'json']);
      return r.code === 0 ? strip(JSON.parse(r.stdout)) : undefined;
    }, 30_000);
    expect(fromB).toEqual(fromA);
  });
});
