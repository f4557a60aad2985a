import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { parse } from 'yaml';
import { checkNamespace, configMapHash, renderBundle } from './bundle.js';

describe('renderBundle', () => {
  it('moves every annex-system object, binding subject and the config to --namespace', () => {
    const objs = renderBundle({ namespace: 'annex-test', image: 'localhost/annex:test' });
    const namespaces = new Set(objs.map((o) => o.metadata.namespace).filter(Boolean));
    expect([...namespaces].sort()).toEqual(['annex-test', 'kube-system']);
    expect(objs.find((o) => o.kind === 'Namespace')!.metadata.name).toBe('annex-test');
    // annex's own ServiceAccount moves; others' (the HPA controller's, in kube-system) stay.
    const subjects = objs.flatMap((o) => o.subjects ?? []);
    for (const s of subjects.filter((s: any) => s.name === 'annex'))
      expect(s.namespace).toBe('annex-test');
    expect(subjects.filter((s: any) => s.name !== 'annex').map((s: any) => s.namespace)).toEqual(
      subjects.filter((s: any) => s.name !== 'annex').map(() => 'kube-system'),
    );
    const cm = objs.find((o) => o.kind === 'ConfigMap')!;
    expect(parse(cm.data['annex.yaml']).tls.namespace).toBe('annex-test');
    const deploy = objs.find((o) => o.kind === 'Deployment')!;
    expect(deploy.spec.template.spec.containers[0].image).toBe('localhost/annex:test');
    expect(deploy.spec.template.spec.volumes[0].configMap.name).toBe(cm.metadata.name);
    expect(cm.metadata.name).toMatch(/^annex-config-[a-z0-9]{10}$/);
  });

  it('the hash changes with the data and never holds 0, 1, 3, a or e', () => {
    const a = configMapHash({ 'a.yaml': 'x: 1' });
    expect(a).toMatch(/^[2456789bcdfghkmt]{10}$/);
    expect(configMapHash({ 'a.yaml': 'x: 2' })).not.toBe(a);
  });

  it('refuses a namespace that is not a DNS-1123 label, in one line', () => {
    expect(() => checkNamespace('Annex_System')).toThrow(
      '--namespace "Annex_System" is not a valid namespace name (a DNS-1123 label)',
    );
  });

  it('writes no YAML warning to stderr for an unknown tag or directive', () => {
    // A Node warning would be a line beside annex install's own output, quoting the files.
    const dir = mkdtempSync(join(tmpdir(), 'annex-bundle-'));
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    try {
      const write = (f: string, text: string) => writeFileSync(join(dir, f), text);
      write(
        'kustomization.yaml',
        '%FOO bar\n---\nresources: [ns.yaml]\nconfigMapGenerator:\n' +
          '  - { name: annex-config, files: [annex.yaml] }\n',
      );
      write('ns.yaml', 'kind: Namespace\nmetadata: { name: annex-system, ? [a]: b }\n');
      write('annex.yaml', 'tls: { namespace: !odd annex-system }\n');
      const objs = renderBundle({ dir, namespace: 'elsewhere' });
      expect(objs.map((o) => o.kind)).toEqual(['Namespace', 'ConfigMap']);
      expect(warn).not.toHaveBeenCalled();
    } finally {
      warn.mockRestore();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
