// docs/admission-callers.md's scene: annex's CA as ./ca.crt (the page's `--cacert ca.crt`),
// and, before the page reads /readyz?verbose, two reviews POSTed with a client certificate
// from a CA of the scene's own (src/certs), which annex must not trust.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createCa, issue } from '../../src/certs/index.js';
import type { SceneContext } from './scenes.js';

export async function prepareCallers(ctx: SceneContext): Promise<void> {
  writeFileSync(join(ctx.cwd, 'ca.crt'), Buffer.from(ctx.caBundle, 'base64'));
}

/** The curl command that POSTs forged.json as a client of another CA (files written here). */
export async function otherCaReview(ctx: SceneContext): Promise<string> {
  const ca = await createCa({ commonName: 'other-ca' });
  const client = await issue({ ca, commonName: 'kube-apiserver', usages: ['clientAuth'] });
  const cert = join(ctx.dir, '.other-client.crt');
  const key = join(ctx.dir, '.other-client.key');
  writeFileSync(cert, client.certPem);
  writeFileSync(key, client.keyPem, { mode: 0o600 });
  return (
    `curl -sf --cacert ca.crt --cert ${cert} --key ${key} -H 'content-type: application/json' ` +
    `--data @forged.json https://127.0.0.1:${ctx.port}/validate/policies.annex.dev`
  );
}
