import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command } from 'commander';
import { describe, expect, it, vi } from 'vitest';
import { register } from './defaults.js';
import { UserError } from '../errors.js';

const podNuFile = fileURLToPath(new URL('../../test/fixtures/pod-nu.yaml', import.meta.url));

describe('annex defaults command', () => {
  const run = async (...args: string[]) => {
    const program = new Command().exitOverride();
    register(program);
    const write = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    try {
      await program.parseAsync(['node', 'annex', 'defaults', ...args]);
      return write.mock.calls.map((c) => String(c[0])).join('');
    } finally {
      write.mockRestore();
    }
  };

  it('reads a file and honours --no-admission-plugins', async () => {
    const out = await run(podNuFile, '--no-admission-plugins');
    expect(out).toContain('  enableServiceLinks: true\n');
    expect(out).not.toContain('kube-api-access-');
    expect(out).not.toContain('priority:');
    const full = await run(podNuFile);
    // Placeholders where the API server picks at random or from the clock.
    expect(full).toContain('kube-api-access-<random>');
    expect(full).toContain('  uid: <allocated>\n');
    expect(full).toContain('  creationTimestamp: <now>\n');
  });

  it('rejects a missing file and a bad --output', async () => {
    await expect(run('/nonexistent/x.yaml')).rejects.toThrow('/nonexistent/x.yaml: no such file');
    await expect(run('-', '-o', 'xml')).rejects.toThrow('--output: must be yaml or json');
  });

  it('reports input that is not Kubernetes objects as a UserError naming the file', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'annex-defaults-')), 'bad.yaml');
    writeFileSync(file, 'kind: Pod');
    await expect(run(file)).rejects.toThrow(UserError);
    await expect(run(file)).rejects.toThrow(`${file}: not a Kubernetes object: missing apiVersion`);
  });

  const fileWith = (text: string) => {
    const file = join(mkdtempSync(join(tmpdir(), 'annex-defaults-')), 'in.yaml');
    writeFileSync(file, text);
    return file;
  };

  it('-o json of several objects prints a v1 List; a cluster-scoped CR gets no namespace', async () => {
    const file = fileWith(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com}
spec:
  group: example.com
  scope: Cluster
  names: {kind: Gadget, plural: gadgets}
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]
---
apiVersion: example.com/v1
kind: Gadget
metadata: {name: g}
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
`);
    const list = JSON.parse(await run(file, '-o', 'json', '--no-last-applied'));
    expect(list).toMatchObject({
      apiVersion: 'v1',
      kind: 'List',
      metadata: { resourceVersion: '' },
    });
    expect(list.items.map((o: any) => o.metadata.namespace)).toEqual([
      undefined,
      undefined,
      'default',
    ]);
    const flagged = JSON.parse(
      await run(file, '-o', 'json', '--cluster-scoped', 'example.com/Widget'),
    );
    expect(flagged.items[2].metadata.namespace).toBeUndefined();
  });

  it('refuses what the API server refuses, in its words, exit 1', async () => {
    const file = fileWith('apiVersion: v1\nkind: Pod\nmetadata: {name: Bad_Name}\n');
    const err = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      expect(await run(file)).toBe('');
      const text = err.mock.calls.map((c) => String(c[0])).join('');
      expect(text).toMatch(
        /^The Pod "Bad_Name" is invalid: \n\* metadata\.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain/,
      );
      expect(text).toContain('* spec.containers: Required value\n');
      expect(process.exitCode).toBe(1);
    } finally {
      err.mockRestore();
      process.exitCode = 0;
    }
  });

  it('--admission=annex: the defaults webhook and -p policies, then scheme defaults again', async () => {
    const policy = fileURLToPath(new URL('../../policies/pinned-images.yaml', import.meta.url));
    const err = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      const pod = JSON.parse(await run(podNuFile, '-o', 'json', '--admission=annex'));
      expect(pod.metadata.labels['app.kubernetes.io/managed-by']).toBe('annex');
      // The webhook's requests, kept as the API server stores quantities.
      expect(pod.spec.containers[0].resources.requests).toBeDefined();
      expect(await run(podNuFile)).not.toContain('managed-by');
      expect(err.mock.calls.map((c) => String(c[0])).join('')).toMatch(
        /^Warning: annex: container "c" had no/,
      );
      const latest = fileWith(
        'apiVersion: v1\nkind: Pod\nmetadata: {name: latest}\nspec:\n  containers: [{name: c, image: nginx}]\n',
      );
      err.mockClear();
      expect(await run(latest, '--admission=annex', '-p', policy)).toBe('');
      expect(process.exitCode).toBe(1);
      expect(err.mock.calls.map((c) => String(c[0])).join('')).toContain(
        'The Pod "latest" is invalid: spec.containers[0].image: Invalid value: "nginx": must be pinned',
      );
    } finally {
      err.mockRestore();
      process.exitCode = 0;
    }
    await expect(run(podNuFile, '-p', policy)).rejects.toThrow('need --admission=annex');
  });
});
