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
import { createNamespace, describeCluster, kubectl } from '../cluster/harness.js';
import { manifestCorpus } from '../fixtures/manifest-corpus.js';
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
