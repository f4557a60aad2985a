// Runs annex in the test process, reachable from the control plane the way it is in a
// cluster: a Service annex.annex-system of type ExternalName → localhost, and the
// APIService / webhook configurations from the repo's own YAML with the test port and
// caBundle filled in. (No ClusterIP: nothing may leave loopback.)
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments, stringify } from 'yaml';
import { loadConfig, type ConfigOverrides } from '../../src/config/load.js';
import { createLogger } from '../../src/log.js';
import { startAnnex, type Annex } from '../../src/server/start.js';
import { cluster, kubectlOk } from './harness.js';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

export interface TestAnnex {
  annex: Annex;
  port: number;
  certsDir: string;
  caBundle: string;
  stop(): Promise<void>;
}

export const ANNEX_NAMESPACE = 'annex-system';
export const ANNEX_SERVICE = 'annex';

/** annex on 127.0.0.1:<free port>, certificates for annex.annex-system.svc, admin kubeconfig. */
export async function startTestAnnex(overrides: ConfigOverrides = {}): Promise<TestAnnex> {
  const certsDir = mkdtempSync(join(tmpdir(), 'annex-certs-'));
  const config = loadConfig({
    overrides: {
      ...overrides,
      server: { host: '127.0.0.1', port: 0, ...overrides.server },
      tls: { dir: certsDir, service: ANNEX_SERVICE, namespace: ANNEX_NAMESPACE, ...overrides.tls },
      kube: { kubeconfig: cluster!.adminKubeconfig, ...overrides.kube },
      log: { level: (process.env.ANNEX_TEST_LOG as 'info') ?? 'silent', ...overrides.log },
    },
  });
  const annex = await startAnnex(config, createLogger(config.log.level));
  const caBundle = readFileSync(join(certsDir, 'ca.crt')).toString('base64');
  return {
    annex,
    port: annex.port,
    certsDir,
    caBundle,
    stop: async () => {
      await annex.close();
      rmSync(certsDir, { recursive: true, force: true });
    },
  };
}

/** The namespace and ExternalName Service the API server dials for annex.annex-system.svc. */
export async function ensureAnnexService(): Promise<void> {
  const docs = [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ANNEX_NAMESPACE } },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: ANNEX_SERVICE, namespace: ANNEX_NAMESPACE },
      spec: { type: 'ExternalName', externalName: 'localhost' },
    },
  ];
  await kubectlOk(['apply', '-f', '-'], { input: docs.map((d) => stringify(d)).join('---\n') });
}

/** Loads a YAML file of the repo (webhooks/…, apiservice/…) as objects. */
export function repoManifest(path: string): any[] {
  return parseAllDocuments(readFileSync(join(repo, path), 'utf8')).map((d) => d.toJSON());
}

/** Points every service reference in the objects at the test port and sets caBundle. */
export function pointAtTestAnnex(objs: any[], port: number, caBundle: string): any[] {
  for (const o of objs) {
    if (o.kind === 'APIService') {
      o.spec.service.port = port;
      o.spec.caBundle = caBundle;
    } else {
      for (const w of o.webhooks ?? []) {
        w.clientConfig.service.port = port;
        w.clientConfig.caBundle = caBundle;
      }
    }
  }
  return objs;
}

export async function applyObjects(objs: any[]): Promise<void> {
  await kubectlOk(['apply', '-f', '-'], { input: objs.map((o) => stringify(o)).join('---\n') });
}

export async function deleteObjects(objs: any[]): Promise<void> {
  for (const o of objs) {
    await kubectlOk(['delete', o.kind, o.metadata.name, '--ignore-not-found', '--wait=false']);
  }
}
