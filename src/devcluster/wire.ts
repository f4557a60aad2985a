// Wiring a running annex into a control plane the way a cluster would: the Service
// annex.annex-system (ExternalName → localhost, so nothing leaves loopback) and the
// repo's own APIService / webhook YAML with the local port and caBundle filled in.
// Used by `annex demo` and by the end-to-end tests.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments, stringify } from 'yaml';

export const ANNEX_NAMESPACE = 'annex-system';
export const ANNEX_SERVICE = 'annex';

/** Runs kubectl with arguments and optional stdin; resolves with stdout, rejects on failure. */
export type Kubectl = (args: string[], input?: string) => Promise<string>;

const repo = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Loads a YAML file of the repo (webhooks/…, apiservice/…) as plain objects. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function repoManifest(path: string): any[] {
  // As the config loader reads YAML: no Node warning line beside the test's or demo's output.
  const docs = parseAllDocuments(readFileSync(join(repo, path), 'utf8'), { logLevel: 'error' });
  return docs.map((d) => d.toJSON());
}

/** Points every service reference at `port` and sets caBundle (APIService, webhooks, CRD conversion). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function pointAtLocalAnnex(objs: any[], port: number, caBundle: string): any[] {
  for (const o of objs) {
    if (o.kind === 'APIService') {
      o.spec.service.port = port;
      o.spec.caBundle = caBundle;
    } else if (o.kind === 'CustomResourceDefinition') {
      const client = o.spec.conversion?.webhook?.clientConfig;
      if (client?.service) client.service.port = port;
      if (client) client.caBundle = caBundle;
    } else {
      for (const w of o.webhooks ?? []) {
        w.clientConfig.service.port = port;
        w.clientConfig.caBundle = caBundle;
      }
    }
  }
  return objs;
}

export async function applyObjects(kubectl: Kubectl, objs: object[]): Promise<void> {
  await kubectl(['apply', '-f', '-'], objs.map((o) => stringify(o)).join('---\n'));
}

/** The namespace and ExternalName Service the API server dials for annex.annex-system.svc. */
export async function ensureAnnexService(kubectl: Kubectl): Promise<void> {
  await applyObjects(kubectl, [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ANNEX_NAMESPACE } },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: ANNEX_SERVICE, namespace: ANNEX_NAMESPACE },
      spec: { type: 'ExternalName', externalName: 'localhost' },
    },
  ]);
}
