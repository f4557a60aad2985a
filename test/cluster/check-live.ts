// `annex check` held equal to the live API server: each object written to a file, created
// with `kubectl create --dry-run=server -f`, and checked offline with the same policies.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import { stringify } from 'yaml';
import { checkFiles, type CheckOptions } from '../../src/cli/check.js';
import type { CompiledPolicy } from '../../src/policy/compile.js';
import { kubectl } from './harness.js';

// The API server's own warning for a workload name with dots is not one `annex check`
// prints yet: a known gap, reported apart. Every policy's warning must match.
const API_SERVER_NAME_WARNING = /^Warning: metadata\.name: this is used in Pod names and hostnames/;

/** A Deployment in `ns`, of one container (nginx:1.27 unless `image`). */
export function deploymentIn(
  ns: string,
  name: string,
  o: { image?: string; labels?: object; hostNetwork?: boolean } = {},
) {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: ns, ...(o.labels ? { labels: o.labels } : {}) },
    spec: {
      selector: { matchLabels: { app: 'x' } },
      template: {
        metadata: { labels: { app: 'x' } },
        spec: {
          ...(o.hostNetwork ? { hostNetwork: true } : {}),
          containers: [{ name: 'c', image: o.image ?? 'nginx:1.27' }],
        },
      },
    },
  };
}

/** What the demo policies (policies/) allow, refuse, warn about and record, one file each. */
export const checkCases = (ns: string): Record<string, object> => ({
  'good.yaml': deploymentIn(ns, 'good', { labels: { 'app.kubernetes.io/name': 'good' } }),
  'name.yaml': deploymentIn(ns, 'bad.name', { labels: { 'app.kubernetes.io/name': 'x' } }),
  'latest.yaml': deploymentIn(ns, 'latest', { image: 'nginx:latest' }),
  'both.yaml': deploymentIn(ns, 'two.faults', { image: 'nginx' }),
  'audit.yaml': deploymentIn(ns, 'hostnet', {
    hostNetwork: true,
    labels: { 'app.kubernetes.io/name': 'h' },
  }),
});

interface Answer {
  file: string;
  allowed: boolean;
  warnings: string[];
  message: string;
}

/**
 * Compares, until they agree (the API server loads new policies, VAPs and webhook rules
 * within seconds) or `timeoutMs` passes, then asserts. Returns the files whose live answer
 * carried the API server's own name warning.
 */
export async function expectCheckEqualsLive(
  cases: Record<string, object>,
  policies: readonly CompiledPolicy[],
  options: CheckOptions,
  timeoutMs = 30_000,
): Promise<string[]> {
  const dir = mkdtempSync(join(tmpdir(), 'annex-check-live-'));
  try {
    for (const [f, o] of Object.entries(cases)) writeFileSync(join(dir, f), stringify(o));
    const offline: Answer[] = Object.keys(cases).map((file) => {
      const [r] = checkFiles([join(dir, file)], policies, options);
      return {
        file,
        allowed: r!.allowed,
        warnings: r!.warnings.map((w) => `Warning: ${w}`),
        message: r!.message,
      };
    });
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const withNameWarning: string[] = [];
      const live: Answer[] = [];
      for (const file of Object.keys(cases)) {
        const r = await kubectl(['create', '--dry-run=server', '-f', join(dir, file)]);
        const all = r.stderr.split('\n').filter((l) => l.startsWith('Warning: '));
        const warnings = all.filter((l) => !API_SERVER_NAME_WARNING.test(l));
        if (all.length !== warnings.length) withNameWarning.push(file);
        const rest = r.stderr
          .split('\n')
          .filter((l) => l && !l.startsWith('Warning: '))
          .join('\n');
        live.push({
          file,
          allowed: r.code === 0,
          warnings,
          message: r.code === 0 ? r.stdout.trim() : rest,
        });
      }
      if (Date.now() > deadline || JSON.stringify(live) === JSON.stringify(offline)) {
        expect(live).toEqual(offline);
        return withNameWarning;
      }
      await new Promise((r) => setTimeout(r, 500));
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
