import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { injectCaBundle } from './inject.js';

// A stand-in for kubectl: keeps objects in a JSON file, records every call, applies merge
// and JSON patches (honouring the resourceVersion `test` op), and can fail one patch.
const FAKE = String.raw`#!/usr/bin/env node
const fs = require('node:fs');
const dir = __dirname;
const args = process.argv.slice(2);
fs.appendFileSync(dir + '/calls.jsonl', JSON.stringify(args) + '\n');
const db = JSON.parse(fs.readFileSync(dir + '/db.json', 'utf8'));
const [flag, kubeconfig, verb, kind, name] = args;
if (flag !== '--kubeconfig' || kubeconfig !== '/kc') { console.error('bad kubeconfig'); process.exit(2); }
const key = kind + '/' + name;
const obj = db[key];
if (!obj) { console.error('Error from server (NotFound): ' + kind + ' "' + name + '" not found'); process.exit(1); }
if (verb === 'get') { process.stdout.write(JSON.stringify(obj)); process.exit(0); }
const patch = JSON.parse(args[args.indexOf('-p') + 1]);
if (args.includes('--type=merge')) {
  obj.spec = { ...obj.spec, ...patch.spec };
} else {
  if (fs.existsSync(dir + '/conflict')) {
    fs.unlinkSync(dir + '/conflict');
    obj.metadata.resourceVersion = String(Number(obj.metadata.resourceVersion) + 1);
    fs.writeFileSync(dir + '/db.json', JSON.stringify(db));
  }
  for (const op of patch) {
    const parts = op.path.split('/').slice(1);
    if (op.op === 'test') {
      if (obj.metadata.resourceVersion !== op.value) { console.error('The request is invalid: testing value failed'); process.exit(1); }
      continue;
    }
    let t = obj;
    for (const p of parts.slice(0, -1)) t = t[p];
    t[parts[parts.length - 1]] = op.value;
  }
}
obj.metadata.resourceVersion = String(Number(obj.metadata.resourceVersion) + 1);
fs.writeFileSync(dir + '/db.json', JSON.stringify(db));
`;

let dir: string;
let kubectl: string;
const BUNDLE = Buffer.from('-----BEGIN CERTIFICATE-----\nfake\n').toString('base64');

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'annex-inject-'));
  kubectl = join(dir, 'kubectl');
  await writeFile(kubectl, FAKE);
  await chmod(kubectl, 0o755);
  await writeFile(join(dir, 'calls.jsonl'), '');
  const hook = (name: string, caBundle?: string) => ({
    name,
    clientConfig: { service: { name: 'annex', namespace: 'annex-system' }, ...(caBundle ? { caBundle } : {}) },
  });
  await writeFile(
    join(dir, 'db.json'),
    JSON.stringify({
      'apiservice/v1alpha1.annex.dev': {
        metadata: { resourceVersion: '1' },
        spec: { group: 'annex.dev', insecureSkipTLSVerify: true },
      },
      'mutatingwebhookconfiguration/annex': {
        metadata: { resourceVersion: '5' },
        webhooks: [hook('a.annex.dev', 'b2xk'), hook('b.annex.dev')],
      },
      'validatingwebhookconfiguration/annex': {
        metadata: { resourceVersion: '9' },
        webhooks: [hook('v.annex.dev', BUNDLE)],
      },
    }),
  );
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const db = async () => JSON.parse(await readFile(join(dir, 'db.json'), 'utf8'));
const calls = async () =>
  (await readFile(join(dir, 'calls.jsonl'), 'utf8'))
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as string[]);

describe('injectCaBundle (through kubectl)', () => {
  it('patches APIService spec and every webhook, with field manager annex', async () => {
    const r = await injectCaBundle({
      kubeconfig: '/kc',
      caBundle: BUNDLE,
      apiServices: ['v1alpha1.annex.dev'],
      mutating: ['annex'],
      validating: ['annex'],
      kubectl,
    });
    expect(r).toEqual([
      { kind: 'apiservice', name: 'v1alpha1.annex.dev', changed: true },
      { kind: 'mutatingwebhookconfiguration', name: 'annex', changed: true, webhooks: 2 },
      { kind: 'validatingwebhookconfiguration', name: 'annex', changed: false, webhooks: 1 },
    ]);
    const state = await db();
    expect(state['apiservice/v1alpha1.annex.dev'].spec).toEqual({
      group: 'annex.dev',
      caBundle: BUNDLE,
      insecureSkipTLSVerify: false,
    });
    const hooks = state['mutatingwebhookconfiguration/annex'].webhooks;
    expect(hooks.map((h: { clientConfig: { caBundle: string } }) => h.clientConfig.caBundle)).toEqual([
      BUNDLE,
      BUNDLE,
    ]);
    const patches = (await calls()).filter((c) => c[2] === 'patch');
    expect(patches).toHaveLength(2);
    for (const p of patches) expect(p).toContain('--field-manager=annex');
    expect(patches[0]).toContain('--type=merge');
    expect(patches[1]).toContain('--type=json');
  });

  it('is a no-op the second time', async () => {
    const opts = { kubeconfig: '/kc', caBundle: BUNDLE, apiServices: ['v1alpha1.annex.dev'], mutating: ['annex'], kubectl };
    await injectCaBundle(opts);
    const before = (await calls()).length;
    const r = await injectCaBundle(opts);
    expect(r.every((x) => !x.changed)).toBe(true);
    expect((await calls()).slice(before).every((c) => c[2] === 'get')).toBe(true);
  });

  it('re-reads and retries when the configuration changed between get and patch', async () => {
    await writeFile(join(dir, 'conflict'), '');
    const r = await injectCaBundle({ kubeconfig: '/kc', caBundle: BUNDLE, mutating: ['annex'], kubectl });
    expect(r[0]?.changed).toBe(true);
    expect((await calls()).map((c) => c[2])).toEqual(['get', 'patch', 'get', 'patch']);
  });

  it('reports kubectl errors with its stderr, and a missing kubectl by name', async () => {
    await expect(
      injectCaBundle({ kubeconfig: '/kc', caBundle: BUNDLE, apiServices: ['nope'], kubectl }),
    ).rejects.toThrow(/get apiservice nope -o json failed: Error from server \(NotFound\)/);
    const saved = process.env.ANNEX_KUBECTL;
    process.env.ANNEX_KUBECTL = join(dir, 'missing-kubectl');
    try {
      await expect(
        injectCaBundle({ kubeconfig: '/kc', caBundle: BUNDLE, apiServices: ['x'] }),
      ).rejects.toThrow(/missing-kubectl not found \(put kubectl on PATH or set ANNEX_KUBECTL\)/);
    } finally {
      if (saved === undefined) delete process.env.ANNEX_KUBECTL;
      else process.env.ANNEX_KUBECTL = saved;
    }
  });
});
