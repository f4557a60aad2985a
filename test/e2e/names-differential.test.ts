// Differential test: for a generated corpus of names, annex's name rules give the same
// verdict and the same message as the real API server's own validation.
import { Agent } from 'node:https';
import { expect, it } from 'vitest';
import { goQuote, validateObjectName } from '../../src/admission/names/index.js';
import { apiRequest, createNamespace, describeCluster } from '../cluster/harness.js';
import { nameCorpus } from '../fixtures/name-corpus.js';

const kinds = [
  { kind: 'ConfigMap', path: (ns: string) => `/api/v1/namespaces/${ns}/configmaps`, body: {} },
  { kind: 'Namespace', path: () => '/api/v1/namespaces', body: {} },
  {
    kind: 'Service',
    path: (ns: string) => `/api/v1/namespaces/${ns}/services`,
    body: { spec: { type: 'ExternalName', externalName: 'localhost' } },
  },
] as const;

/** What annex predicts the API server answers: null for a create that succeeds. */
function annexVerdict(kind: string, name: string): string | null {
  const errors = validateObjectName('', kind, name);
  if (errors.length === 0) return null;
  const msgs = [...new Set(errors.map((e) => e.message))];
  return `${kind} ${goQuote(name)} is invalid: ${msgs.length === 1 ? msgs[0] : `[${msgs.join(', ')}]`}`;
}

describeCluster('name rules: annex vs the real API server', () => {
  const corpus = nameCorpus();

  it(`uses a corpus of at least 300 names (${corpus.length})`, () => {
    expect(corpus.length).toBeGreaterThanOrEqual(300);
  });

  for (const k of kinds) {
    it(`agrees on every ${k.kind} create`, async () => {
      const ns = await createNamespace('names');
      const agent = new Agent({ keepAlive: true, maxSockets: 8 });
      const mismatches: string[] = [];
      let denied = 0;
      // Dry-run creates: validated fully, stored never.
      const queue = [...corpus];
      await Promise.all(
        Array.from({ length: 8 }, async () => {
          for (let name = queue.shift(); name !== undefined; name = queue.shift()) {
            const r = await apiRequest('POST', `${k.path(ns)}?dryRun=All`, {
              body: { apiVersion: 'v1', kind: k.kind, metadata: { name }, ...k.body },
              agent,
            });
            const server =
              r.status === 201
                ? null
                : r.status === 422
                  ? r.json().message
                  : `HTTP ${r.status}: ${r.body}`;
            const ours = annexVerdict(k.kind, name);
            if (server !== null) denied++;
            if (server !== ours)
              mismatches.push(`${JSON.stringify(name)}\n  server: ${server}\n  annex:  ${ours}`);
          }
        }),
      );
      agent.destroy();
      expect(mismatches.slice(0, 5).join('\n')).toBe('');
      // The corpus exercises both outcomes for every kind.
      expect(denied).toBeGreaterThan(50);
      expect(corpus.length - denied).toBeGreaterThan(30);
      console.log(
        `names differential ${k.kind}: ${corpus.length} names, ${denied} denied, 0 mismatches`,
      );
    });
  }
});
