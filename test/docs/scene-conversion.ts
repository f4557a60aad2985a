// docs/conversion.md's scene: the seed's CronTab CRD in ../crontab-crd.yaml, examples/crontab
// built into ./dist/feature.js as a user builds it, an annex.yaml that injects the CA into
// the CRD, and `stored NAME` printing what etcd holds for a CronTab of the namespace.
import { execFile } from 'node:child_process';
import { chmodSync, cpSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../cluster/control-plane.js';
import { ensureAnnexService } from '../cluster/annex.js';
import { cluster, kubectl } from '../cluster/harness.js';
import type { SceneContext } from './scenes.js';

const repo = join(import.meta.dirname, '..', '..');
const CRD = 'crontabs.example.com';

export async function prepareConversion(ctx: SceneContext): Promise<void> {
  // Another file may have left the CRD terminating: start from none.
  await kubectl(['wait', '--for=delete', `crd/${CRD}`, '--timeout=60s']);
  ctx.cleanups.push(async () => {
    await kubectl(['delete', 'crd', CRD, '--wait=false']);
    for (const kind of ['clusterrolebinding', 'clusterrole'])
      await kubectl(['delete', kind, 'annex:crd-ca-injector', '--ignore-not-found']);
  });
  await ensureAnnexService();

  const app = ctx.cwd;
  mkdirSync(join(app, 'node_modules'), { recursive: true });
  for (const f of ['feature.ts', 'tsconfig.json', 'package.json'])
    cpSync(join(repo, 'examples', 'crontab', f), join(app, f));
  // `npm install ../annex` as the example's package.json says, without a copy.
  symlinkSync(repo, join(app, 'node_modules', 'annex'));
  symlinkSync(join(repo, 'node_modules', '@types'), join(app, 'node_modules', '@types'));
  await promisify(execFile)(process.execPath, [
    join(repo, 'node_modules', 'typescript', 'bin', 'tsc'),
    '-p',
    app,
  ]);

  // A free port, shown as the doc's 18443 (another run may hold that one).
  const port = await freePort();
  ctx.shown.push([new RegExp(`\\b${port}\\b`, 'g'), '18443']);
  writeFileSync(
    join(app, 'annex.yaml'),
    [
      `server: {port: ${port}}`,
      `tls: {dir: certs, inject: {crds: [${CRD}]}}`,
      `admission: {clientCA: ${cluster!.webhookClientCaFile}, names: {enabled: false}, defaults: {enabled: false}}`,
      'metrics: {enabled: false}',
      'log: {level: info}',
      '',
    ].join('\n'),
  );

  // `stored NAME...`: the object etcd holds, reduced to what the story is about.
  const stored = join(ctx.dir, '.bin', 'stored');
  writeFileSync(stored, `#!/bin/sh\nexec "${process.execPath}" "${stored}.mjs" "$@"\n`);
  chmodSync(stored, 0o755);
  writeFileSync(
    `${stored}.mjs`,
    `const prefix = '/registry/example.com/crontabs/${ctx.ns}/';
for (const name of process.argv.slice(2)) {
  const res = await fetch('${cluster!.etcd}/v3/kv/range', {
    method: 'POST',
    body: JSON.stringify({ key: Buffer.from(prefix + name).toString('base64') }),
  });
  const { kvs = [] } = await res.json();
  const o = kvs.length ? JSON.parse(Buffer.from(kvs[0].value, 'base64').toString()) : {};
  const { apiVersion = null, time = null } = o;
  console.log(JSON.stringify({ apiVersion, time, annotations: o.metadata?.annotations ?? null }));
}
`,
  );
}
