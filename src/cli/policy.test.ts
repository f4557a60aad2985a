import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { celYaml } from './policy.js';

const policies = join(import.meta.dirname, '..', '..', 'policies');

describe('annex policy cel', () => {
  it('prints applicable YAML: the generated objects, and a comment per policy left on the webhook', () => {
    const out = celYaml([policies]);
    const objects = parseAllDocuments(out)
      .map((d) => d.toJSON() as { kind: string; metadata: { name: string } } | null)
      .filter((o) => o !== null);
    expect(objects.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual([
      'ValidatingAdmissionPolicy/annex-app-name-label',
      'ValidatingAdmissionPolicyBinding/annex-app-name-label-binding',
      'ValidatingAdmissionPolicy/annex-workload-names',
      'ValidatingAdmissionPolicyBinding/annex-workload-names-binding',
    ]);
    expect(out).toContain(
      '# AdmissionPolicy host-network runs in the webhook: rule "no-host-network"',
    );
    expect(out).not.toContain('&a1'); // no YAML anchors
  });
});
