// The built-in kinds' field tree annex checks policy paths against (src/policy/fields/
// builtin.ts) is the pinned API server's OpenAPI v3, rendered: render it again from the
// live server and compare. ANNEX_RECORD=1 writes the rendering instead.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { fieldTree, openApiPaths, renderFieldTree } from '../../src/policy/fields/tree.js';
import { apiRequest, describeCluster } from '../cluster/harness.js';

const file = join(import.meta.dirname, '..', '..', 'src', 'policy', 'fields', 'builtin.ts');

describeCluster('policy field tree vs the API server', (c) => {
  it("is the pinned API server's OpenAPI v3 for every kind match.kinds names", async () => {
    const docs = [];
    for (const path of openApiPaths()) {
      const r = await apiRequest('GET', `/openapi/v3/${path}`);
      expect(r.status, path).toBe(200);
      docs.push(r.json());
    }
    const text = renderFieldTree(fieldTree(docs), c.version);
    if (process.env.ANNEX_RECORD === '1') writeFileSync(file, text);
    expect(readFileSync(file, 'utf8')).toBe(text);
  });
});
