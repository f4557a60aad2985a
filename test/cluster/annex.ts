// Runs annex in the test process, reachable from the control plane the way it is in a
// cluster: a Service annex.annex-system of type ExternalName → localhost, and the
// APIService / webhook configurations from the repo's own YAML with the test port and
// caBundle filled in. (No ClusterIP: nothing may leave loopback.)
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { request } from 'node:https';
import { join } from 'node:path';
import { loadConfig, type ConfigOverrides } from '../../src/config/load.js';
import { createLogger, type Logger } from '../../src/log.js';
import { declarationsOf, renderObjects, serviceRefOf } from '../../src/manifests/render.js';
import type { Feature } from '../../src/core/feature.js';
import { startAnnex, type Annex } from '../../src/server/start.js';
import * as wire from '../../src/devcluster/wire.js';
import { ANNEX_NAMESPACE, ANNEX_SERVICE } from '../../src/devcluster/wire.js';
import { cluster, kubectlOk, waitForCondition } from './harness.js';

export interface TestAnnex {
  annex: Annex;
  port: number;
  certsDir: string;
  caBundle: string;
  stop(): Promise<void>;
}

export { ANNEX_NAMESPACE, ANNEX_SERVICE } from '../../src/devcluster/wire.js';
export const repoManifest = wire.repoManifest;

/** annex on 127.0.0.1:<free port>, certificates for annex.annex-system.svc, admin kubeconfig. */
export async function startTestAnnex(
  overrides: ConfigOverrides = {},
  features: Feature[] = [],
  opts: { log?: Logger } = {},
): Promise<TestAnnex> {
  const certsDir = mkdtempSync(join(tmpdir(), 'annex-certs-'));
  const config = loadConfig({
    overrides: {
      ...overrides,
      // stop() drains: the API server's pooled webhook connections, idle, stay open until
      // the deadline (15 s by default); a test's teardown need not wait that long.
      server: { host: '127.0.0.1', port: 0, shutdownTimeoutSeconds: 2, ...overrides.server },
      tls: { dir: certsDir, service: ANNEX_SERVICE, namespace: ANNEX_NAMESPACE, ...overrides.tls },
      kube: { kubeconfig: cluster!.adminKubeconfig, ...overrides.kube },
      // The test API server presents this CA's client certificate to every webhook, as an
      // install with the admission kubeconfig does: its reviews are authenticated.
      admission: { clientCA: cluster!.webhookClientCaFile, ...overrides.admission },
      log: { level: (process.env.ANNEX_TEST_LOG as 'info') ?? 'silent', ...overrides.log },
    },
  });
  const annex = await startAnnex(config, opts.log ?? createLogger(config.log.level), features);
  // tls.dir may be another annex's (replicas sharing one CA); only our own temp dir is removed.
  const caBundle = readFileSync(join(config.tls.dir, 'ca.crt')).toString('base64');
  return {
    annex,
    port: annex.port,
    certsDir: config.tls.dir,
    caBundle,
    stop: async () => {
      await annex.close();
      rmSync(certsDir, { recursive: true, force: true });
    },
  };
}

const run = (args: string[], input?: string) =>
  kubectlOk(args, input === undefined ? {} : { input });

/** The namespace and ExternalName Service the API server dials for annex.annex-system.svc. */
export const ensureAnnexService = () => wire.ensureAnnexService(run);

/** Points every service reference in the objects at the test port and sets caBundle. */
export const pointAtTestAnnex = wire.pointAtLocalAnnex;

export const applyObjects = (objs: any[]) => wire.applyObjects(run, objs);

export async function deleteObjects(objs: any[]): Promise<void> {
  for (const o of objs) {
    await kubectlOk(['delete', o.kind, o.metadata.name, '--ignore-not-found', '--wait=false']);
  }
}

/** The repo's AdmissionPolicy and PolicyException CRDs, applied and Established. */
export async function installPolicyCrd(): Promise<void> {
  await applyObjects([
    ...repoManifest('manifests/crds/admissionpolicies.yaml'),
    ...repoManifest('manifests/crds/policyexceptions.yaml'),
  ]);
  await waitForCondition(
    ['crd/admissionpolicies.policy.annex.dev', 'crd/policyexceptions.policy.annex.dev'],
    'Established',
  );
}

/** Registers the APIServices of a repo YAML file at a test annex and waits until each is Available. */
export async function registerApiServices(path: string, annex: TestAnnex): Promise<any[]> {
  await ensureAnnexService();
  const objs = pointAtTestAnnex(repoManifest(path), annex.port, annex.caBundle);
  await applyObjects(objs);
  await waitForCondition(
    objs.map((o) => `apiservice/${o.metadata.name}`),
    'Available',
  );
  return objs;
}

/** GET a path of a test annex directly (not through the API server), as a client certificate or nobody. */
export function annexGet(
  annex: TestAnnex,
  path: string,
  id?: readonly [certFile: string, keyFile: string],
): Promise<{ status: number; body: string }> {
  return annexRequest(annex, 'GET', path, undefined, id);
}

/** POST JSON to a test annex directly (a review as any Pod could send it), on a fresh connection. */
export function annexPost(
  annex: TestAnnex,
  path: string,
  body: unknown,
  id?: readonly [certFile: string, keyFile: string],
): Promise<{ status: number; body: string }> {
  return annexRequest(annex, 'POST', path, JSON.stringify(body), id);
}

function annexRequest(
  annex: TestAnnex,
  method: string,
  path: string,
  body: string | undefined,
  id?: readonly [certFile: string, keyFile: string],
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: annex.port,
        method,
        path,
        ca: readFileSync(join(annex.certsDir, 'ca.crt')),
        ...(id ? { cert: readFileSync(id[0]), key: readFileSync(id[1]) } : {}),
        servername: 'localhost',
        ...(body === undefined
          ? {}
          : { agent: false, headers: { 'content-type': 'application/json' } }),
      },
      (res) => {
        let text = '';
        res.on('data', (d) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * The registration objects of one of a test annex's features, as `annex manifests` renders
 * them, pointed at that annex; the named webhooks reach it only from namespace `ns`.
 */
export function featureRegistrations(
  annex: TestAnnex,
  featureName: string,
  confine: { webhooks: string[]; namespace: string },
): any[] {
  const feature = annex.annex.features.find((f) => f.name === featureName);
  if (!feature) throw new Error(`test annex has no feature ${featureName}`);
  const objs = renderObjects(declarationsOf([feature]), serviceRefOf(loadConfig({}))) as any[];
  for (const o of objs)
    for (const w of o.webhooks ?? [])
      if (confine.webhooks.includes(w.name))
        w.namespaceSelector = { matchLabels: { 'kubernetes.io/metadata.name': confine.namespace } };
  return pointAtTestAnnex(objs, annex.port, annex.caBundle);
}
