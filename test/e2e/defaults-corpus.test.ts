// Differential test of `annex defaults` on a generated corpus (test/fixtures/manifest-corpus.ts):
// one `kubectl apply --dry-run=server -o json` of the whole corpus against the real API server,
// one `annex defaults -o json` of the same file, compared object by object. Values the API
// server allocates at random are printed by annex as placeholders and compared by shape.
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';
import { Agent } from 'node:https';
import { createRefusal, isClusterScoped } from '../../src/admission/defaults/index.js';
import { apiRequest, createNamespace, describeCluster, kubectl } from '../cluster/harness.js';
import { brokenCorpus, breakers, manifestCorpus } from '../fixtures/manifest-corpus.js';
import { generatedNameCorpus } from '../fixtures/name-corpus.js';
import { placeholderMismatch } from '../fixtures/placeholders.js';

const cli = join(import.meta.dirname, '..', '..', 'dist', 'cli', 'main.js');

/**
 * Paths where annex and the server may differ, each with its reason. Empty: every
 * manifest of the corpus is expected to match in full.
 */
const EXCLUDED: { path: RegExp; reason: string }[] = [];

/** Differences between annex's object and the server's, as `path: annex ≠ server` lines. */
function diff(annex: unknown, server: unknown, path = ''): string[] {
  const why = placeholderMismatch(annex, server, path);
  if (why !== undefined) return why === '' ? [] : [`${path}: ${why}`];
  if (EXCLUDED.some((e) => e.path.test(path))) return [];
  if (Array.isArray(annex) && Array.isArray(server)) {
    if (annex.length !== server.length) {
      return [`${path}: ${JSON.stringify(annex)} ≠ ${JSON.stringify(server)}`];
    }
    return annex.flatMap((a, i) => diff(a, server[i], `${path}[${i}]`));
  }
  if (annex && server && typeof annex === 'object' && typeof server === 'object') {
    const a = annex as Record<string, unknown>;
    const s = server as Record<string, unknown>;
    return [...new Set([...Object.keys(a), ...Object.keys(s)])]
      .sort()
      .flatMap((k) => diff(a[k], s[k], `${path}.${k}`));
  }
  return JSON.stringify(annex) === JSON.stringify(server)
    ? []
    : [`${path}: ${JSON.stringify(annex)} ≠ ${JSON.stringify(server)}`];
}

describeCluster('annex defaults vs the real --dry-run=server, generated corpus', () => {
  const corpus = manifestCorpus();

  it(`compares every manifest of the corpus (${corpus.length})`, async () => {
    const kinds = new Set(corpus.map((m) => m.object.kind));
    for (const k of [
      'Pod',
      'Deployment',
      'StatefulSet',
      'DaemonSet',
      'ReplicaSet',
      'Job',
      'CronJob',
      'Service',
      'PersistentVolumeClaim',
      'ConfigMap',
      'Secret',
      'Namespace',
      'Ingress',
      'NetworkPolicy',
      'HorizontalPodAutoscaler',
      'PodDisruptionBudget',
      'ServiceAccount',
      'Role',
      'RoleBinding',
    ]) {
      expect(kinds).toContain(k);
    }
    const ns = await createNamespace('defaults');
    const file = join(mkdtempSync(join(tmpdir(), 'annex-corpus-')), 'corpus.json');
    writeFileSync(
      file,
      JSON.stringify({ apiVersion: 'v1', kind: 'List', items: corpus.map((m) => m.object) }),
    );
    const server = await kubectl(['apply', '-n', ns, '-f', file, '--dry-run=server', '-o', 'json']);
    expect(server.stderr).toBe('');
    const annex = await promisify(execFile)(
      process.execPath,
      [cli, 'defaults', file, '-n', ns, '-o', 'json'],
      {
        maxBuffer: 64 << 20,
      },
    );
    const serverList = JSON.parse(server.stdout);
    const annexList = JSON.parse(annex.stdout);
    expect(annexList).toMatchObject({ apiVersion: 'v1', kind: 'List' });
    expect(serverList.items).toHaveLength(corpus.length);
    const mismatches: string[] = [];
    corpus.forEach((m, i) => {
      const d = diff(annexList.items[i], serverList.items[i]);
      if (d.length) mismatches.push(`${m.id}\n    ${d.join('\n    ')}`);
    });
    if (process.env.ANNEX_DIFF_DUMP) console.log(mismatches.join('\n'));
    expect(mismatches.slice(0, 8).join('\n')).toBe('');
    console.log(
      `defaults differential: ${corpus.length} manifests of ${kinds.size} kinds compared, 0 mismatches, ${EXCLUDED.length} exclusions`,
    );
  });
});

describeCluster('annex defaults refuses what the real API server refuses', () => {
  const names = generatedNameCorpus().filter((n) => n.length < 80);
  const broken = brokenCorpus(names);

  it(`answers every broken manifest as the API server does (${broken.length})`, async () => {
    const ns = await createNamespace('refusals');
    const agent = new Agent({ keepAlive: true, maxSockets: 8 });
    const mismatches: string[] = [];
    let refused = 0;
    const queue = broken.map((m, i) => ({ m, i }));
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        for (let next = queue.shift(); next; next = queue.shift()) {
          const { m } = next;
          const o = m.object;
          const path = `${collectionPath(o, ns)}?dryRun=All`;
          const r = await apiRequest('POST', path, { body: o, agent });
          const j = r.json();
          const serverName: string = (r.status === 201 ? j.metadata?.name : j.details?.name) ?? '';
          const generated =
            !o.metadata?.name &&
            typeof o.metadata?.generateName === 'string' &&
            o.metadata.generateName;
          const suffix = generated ? serverName.slice(-5) : 'bcdfg';
          const ours = createRefusal(o, suffix);
          const server = r.status === 201 ? undefined : j;
          if (server) refused++;
          const same =
            server?.code === ours?.code &&
            server?.reason === ours?.reason &&
            server?.message === ours?.message &&
            JSON.stringify(server?.details?.causes ?? null) ===
              JSON.stringify(ours?.details?.causes ?? null);
          if (!same) {
            const a = server ? `${server.code} ${server.message}` : 'created';
            const b = ours ? `${ours.code} ${ours.message}` : 'created';
            let at = 0;
            while (at < a.length && a[at] === b[at]) at++;
            const from = Math.max(0, at - 60);
            mismatches.push(
              `${m.id}\n  server: …${a.slice(from, at + 160)}\n  annex:  …${b.slice(from, at + 160)}`,
            );
          }
        }
      }),
    );
    agent.destroy();
    if (process.env.ANNEX_DIFF_DUMP) console.log(mismatches.join('\n'));
    expect(mismatches.slice(0, 8).join('\n')).toBe('');
    expect(refused).toBeGreaterThan(broken.length / 2);
    console.log(
      `defaults refusals: ${broken.length} broken manifests, ${refused} refused, 0 mismatches`,
    );
  });

  it('the CLI prints the refusals as kubectl does and exits 1', async () => {
    const ns = await createNamespace('refusals');
    const dir = mkdtempSync(join(tmpdir(), 'annex-refusal-'));
    const bad = breakers.find((b) => b.id === 'no-image')!;
    const pod = structuredClone(manifestCorpus().find((m) => m.object.kind === 'Pod')!.object);
    bad.apply(pod, Math.random, []);
    const file = join(dir, 'pod.json');
    writeFileSync(file, JSON.stringify(pod));
    const server = await kubectl([
      'apply',
      '-n',
      ns,
      '-f',
      file,
      '--dry-run=server',
      '--validate=false',
    ]);
    const annex = await promisify(execFile)(process.execPath, [
      cli,
      'defaults',
      file,
      '-n',
      ns,
    ]).then(
      () => ({ code: 0, stderr: '' }),
      (e: { code: number; stderr: string }) => e,
    );
    expect(server.code).toBe(1);
    expect(annex.code).toBe(1);
    expect(annex.stderr).toBe(server.stderr);
  });
});

/** The collection URL a manifest is created at; the plural as kubectl guesses it. */
function collectionPath(o: any, ns: string): string {
  const k = String(o.kind).toLowerCase();
  const resource = k.endsWith('s') ? `${k}es` : k.endsWith('y') ? `${k.slice(0, -1)}ies` : `${k}s`;
  const base = o.apiVersion.includes('/') ? `/apis/${o.apiVersion}` : `/api/${o.apiVersion}`;
  return isClusterScoped(o.apiVersion, o.kind)
    ? `${base}/${resource}`
    : `${base}/namespaces/${ns}/${resource}`;
}
