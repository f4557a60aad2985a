// The seed's storage-version story against the real kube-apiserver, with etcd read to
// prove it: the seed's CronTab CRD (`conversion: strategy: None`) loses a `time` written
// through v1; the examples/crontab conversion, served by annex, keeps it through v1beta1
// storage; `annex migrate` moves every object to v1 once v1 is the storage version and
// trims status.storedVersions, after which v1beta1 can go without losing anything.
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import crontab, { crontabs, TIME_ANNOTATION } from '../../examples/crontab/feature.js';
import { loadConfig } from '../../src/config/load.js';
import {
  customResourceDefinition,
  declarationsOf,
  renderObjects,
  serviceRefOf,
} from '../../src/manifests/render.js';
import {
  applyObjects,
  ensureAnnexService,
  pointAtTestAnnex,
  startTestAnnex,
  type TestAnnex,
} from '../cluster/annex.js';
import { expectOneLineError, runCli } from '../cluster/cli.js';
import { freePort } from '../cluster/control-plane.js';
import { storedCustomResources } from '../cluster/etcd.js';
import {
  createNamespace,
  describeCluster,
  kubectl,
  kubectlOk,
  waitForCondition,
} from '../cluster/harness.js';
import { eventually } from '../cluster/kubelet.js';

const CRD = 'crontabs.example.com';

/** The seed's CustomResourceDefinition, as the page shows it. */
const SEED_CRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.example.com
spec:
  group: example.com
  versions:
  - name: v1beta1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          host:
            type: string
          port:
            type: string
  - name: v1
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        properties:
          host:
            type: string
          port:
            type: string
          time:
            type: string
  conversion:
    strategy: None
  scope: Namespaced
  names:
    plural: crontabs
    singular: crontab
    kind: CronTab
    shortNames:
    - ct
`;

describeCluster('CRD conversion and storage-version migration (the seed’s CronTab)', (c) => {
  let ns = '';
  let annex: TestAnnex | undefined;
  const crontabYaml = (version: string, name: string, fields: Record<string, string>) =>
    JSON.stringify({
      apiVersion: `example.com/${version}`,
      kind: 'CronTab',
      metadata: { name, namespace: ns },
      ...fields,
    });
  const get = async (version: string) => {
    const out = await kubectlOk(['get', `crontabs.${version}.example.com`, '-n', ns, '-o', 'json']);
    return Object.fromEntries(JSON.parse(out).items.map((o: any) => [o.metadata.name, o]));
  };
  const stored = () => storedCustomResources(c, 'example.com', 'crontabs', ns);
  const crd = async () => JSON.parse(await kubectlOk(['get', 'crd', CRD, '-o', 'json']));
  /** `name → stored apiVersion` for every CronTab in etcd. */
  const storedVersions = async () =>
    Object.fromEntries(Object.entries(await stored()).map(([k, v]) => [k, v.apiVersion]));

  beforeAll(async () => {
    // Another file may have left the CRD terminating: start from none.
    await kubectl(['wait', '--for=delete', `crd/${CRD}`, '--timeout=60s']);
    ns = await createNamespace('crontab');
  });
  afterAll(async () => {
    await kubectl(['delete', 'crd', CRD, '--wait=false']);
    await kubectl(['delete', 'namespace', ns, '--wait=false']);
    await annex?.stop();
  });

  it('before: with strategy None (the seed’s CRD), a time written through v1 is never stored', async () => {
    await kubectlOk(['apply', '-f', '-'], { input: SEED_CRD });
    await waitForCondition([`crd/${CRD}`], 'Established');
    await eventually(() =>
      kubectlOk(['create', '-f', '-'], {
        input: crontabYaml('v1', 'lost', { host: 'db', port: '5432', time: '02:00' }),
      }),
    );
    const v1 = await get('v1');
    expect(v1.lost).toMatchObject({ apiVersion: 'example.com/v1', host: 'db', port: '5432' });
    expect(v1.lost.time).toBeUndefined();
    const raw = (await stored()).lost;
    expect(raw.apiVersion).toBe('example.com/v1beta1');
    expect(raw).not.toHaveProperty('time');
  });

  it('with annex’s conversion webhook, time survives v1beta1 storage, read in both versions', async () => {
    // The CRD exactly as `annex manifests` renders it from examples/crontab, the caBundle
    // left to annex (tls.inject.crds).
    const port = await freePort();
    const rendered = renderObjects(
      declarationsOf([crontab]),
      serviceRefOf(loadConfig({})),
    ) as any[];
    expect(rendered.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual([
      `CustomResourceDefinition/${CRD}`,
      'ClusterRole/annex:crd-ca-injector',
      'ClusterRoleBinding/annex:crd-ca-injector',
    ]);
    const [crdObject] = pointAtTestAnnex(rendered.slice(0, 1), port, '');
    delete crdObject.spec.conversion.webhook.clientConfig.caBundle;
    await ensureAnnexService();
    await applyObjects([crdObject]);
    annex = await startTestAnnex(
      {
        server: { port },
        metrics: { enabled: false },
        // Strict about AdmissionReviews' callers: the API server calls conversion webhooks
        // without a client certificate, and every conversion below must still go through.
        admission: { requireClientCert: true },
        tls: {
          inject: { apiServices: [], validatingWebhooks: [], mutatingWebhooks: [], crds: [CRD] },
        },
      },
      [crontab],
    );
    const conversion = (await crd()).spec.conversion;
    expect(conversion).toEqual({
      strategy: 'Webhook',
      webhook: {
        clientConfig: {
          service: {
            namespace: 'annex-system',
            name: 'annex',
            port,
            path: '/convert/crontabs.example.com',
          },
          caBundle: annex.caBundle,
        },
        conversionReviewVersions: ['v1'],
      },
    });

    // The API server picks up the new conversion shortly after the update: until then a
    // write still loses time, so write again until one keeps it.
    await eventually(async () => {
      await kubectlOk(['create', '-f', '-'], {
        input: crontabYaml('v1', 'kept', { host: 'db', port: '5432', time: '02:00' }),
      });
      if ((await get('v1')).kept.time === '02:00') return true;
      await kubectlOk(['delete', 'crontabs.v1.example.com', 'kept', '-n', ns]);
    });
    await kubectlOk(['create', '-f', '-'], {
      input: crontabYaml('v1beta1', 'beta', { host: 'cache', port: '6379' }),
    });

    const v1 = await get('v1');
    expect(v1.kept).toMatchObject({ apiVersion: 'example.com/v1', time: '02:00', host: 'db' });
    expect(v1.kept.metadata.annotations).toBeUndefined();
    expect(v1.beta).toMatchObject({ apiVersion: 'example.com/v1', host: 'cache', port: '6379' });
    expect(v1.beta.time).toBeUndefined();
    expect(v1.lost.time).toBeUndefined(); // lost before annex: nothing can bring it back
    const v1beta1 = await get('v1beta1');
    expect(v1beta1.kept.time).toBeUndefined();
    expect(v1beta1.kept.metadata.annotations).toEqual({ [TIME_ANNOTATION]: '02:00' });

    const raw = await stored();
    expect(await storedVersions()).toEqual({
      beta: 'example.com/v1beta1',
      kept: 'example.com/v1beta1',
      lost: 'example.com/v1beta1',
    });
    expect(raw.kept.metadata.annotations).toEqual({ [TIME_ANNOTATION]: '02:00' });
    expect(raw.kept).not.toHaveProperty('time');
  });

  it('v1.37 serves the built-in StorageVersionMigration API (its controller lives in kube-controller-manager)', async () => {
    const r = await kubectlOk(['api-resources', '--api-group=storagemigration.k8s.io']);
    expect(r).toMatch(
      /storageversionmigrations\s+storagemigration\.k8s\.io\/v1\s+false\s+StorageVersionMigration/,
    );
  });

  it('storage switched to v1 and `annex migrate`: etcd holds v1 for every object, storedVersions ["v1"]', async () => {
    await kubectlOk([
      'patch',
      'crd',
      CRD,
      '--type=json',
      '-p',
      JSON.stringify([
        { op: 'replace', path: '/spec/versions/0/storage', value: false },
        { op: 'replace', path: '/spec/versions/1/storage', value: true },
      ]),
    ]);
    // The API server rebuilds its CronTab storage in the background: a write lands in v1 once it has.
    await kubectlOk(['create', '-f', '-'], { input: crontabYaml('v1', 'probe', { host: 'p' }) });
    await eventually(async () => {
      await kubectlOk([
        'annotate',
        'crontabs.v1.example.com',
        'probe',
        '-n',
        ns,
        '--overwrite',
        `at=${Date.now()}`,
      ]);
      return (await stored()).probe.apiVersion === 'example.com/v1' || undefined;
    });
    expect((await crd()).status.storedVersions).toEqual(['v1beta1', 'v1']);
    expect(await storedVersions()).toEqual({
      beta: 'example.com/v1beta1',
      kept: 'example.com/v1beta1',
      lost: 'example.com/v1beta1',
      probe: 'example.com/v1',
    });

    const r = await runCli(['migrate', CRD, '--kubeconfig', c.adminKubeconfig, '--page-size', '2']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout.split('\n')).toEqual([
      `${CRD}: rewriting every object in storage version v1 (status.storedVersions: [v1beta1, v1])`,
      `${CRD}: page 1: 2 rewritten, about 2 to go`,
      `${CRD}: page 2: 4 rewritten`,
      `${CRD}: status.storedVersions: [v1beta1, v1] → [v1]`,
      '',
    ]);

    expect(await storedVersions()).toEqual({
      beta: 'example.com/v1',
      kept: 'example.com/v1',
      lost: 'example.com/v1',
      probe: 'example.com/v1',
    });
    const raw = await stored();
    expect(raw.kept.time).toBe('02:00');
    expect(raw.kept.metadata.annotations).toBeUndefined();
    expect((await crd()).status.storedVersions).toEqual(['v1']);
  });

  it('removing v1beta1 afterwards loses nothing', async () => {
    await kubectlOk([
      'patch',
      'crd',
      CRD,
      '--type=json',
      '-p',
      JSON.stringify([
        { op: 'test', path: '/spec/versions/0/name', value: 'v1beta1' },
        { op: 'remove', path: '/spec/versions/0' },
      ]),
    ]);
    expect((await crd()).spec.versions.map((v: any) => v.name)).toEqual(['v1']);
    await eventually(async () => {
      const r = await kubectl(['get', 'crontabs.v1beta1.example.com', '-n', ns]);
      return r.code !== 0 || undefined;
    });
    const v1 = await get('v1');
    expect(Object.keys(v1).sort()).toEqual(['beta', 'kept', 'lost', 'probe']);
    expect(v1.kept).toMatchObject({ host: 'db', port: '5432', time: '02:00' });
    expect(v1.beta).toMatchObject({ host: 'cache', port: '6379' });
    expect(v1.lost).toMatchObject({ host: 'db', port: '5432' });
  });

  it('for a CRD annex does not own, only spec.conversion is rendered, and server-side apply merges it in', async () => {
    const fragment = customResourceDefinition(
      { ...crontabs, crd: undefined },
      { ...serviceRefOf(loadConfig({})), port: annex!.port },
    ) as any;
    expect(Object.keys(fragment.spec)).toEqual(['conversion']);
    const merged = JSON.parse(
      await kubectlOk(
        [
          'apply',
          '--server-side',
          '--field-manager=annex',
          '--dry-run=server',
          '-o',
          'json',
          '-f',
          '-',
        ],
        { input: JSON.stringify(fragment) },
      ),
    );
    // The owner's fields stay; annex's caBundle (injected) stays.
    expect(merged.spec.versions.map((v: any) => v.name)).toEqual(['v1']);
    expect(merged.spec.names.shortNames).toEqual(['ct']);
    expect(merged.spec.conversion.webhook.clientConfig).toMatchObject({
      service: { path: '/convert/crontabs.example.com', port: annex!.port },
      caBundle: annex!.caBundle,
    });
  });

  it('`annex migrate` mistakes are one line and exit 1', async () => {
    const unknown = await runCli([
      'migrate',
      'nopes.example.com',
      '--kubeconfig',
      c.adminKubeconfig,
    ]);
    expect(expectOneLineError(unknown)).toBe(
      'annex: unknown CRD "nopes.example.com" (a CustomResourceDefinition name, as `kubectl get crds` lists them)',
    );
    const badFlag = await runCli(['migrate', CRD, '--page-size', '0']);
    expect(expectOneLineError(badFlag)).toBe(
      'annex: --page-size must be a whole number > 0, got "0"',
    );
    const dead = join(c.dir, 'dead.kubeconfig');
    const deadPort = await freePort();
    writeFileSync(
      dead,
      readFileSync(c.adminKubeconfig, 'utf8').replace(c.server, `https://127.0.0.1:${deadPort}`),
    );
    try {
      const r = await runCli(['migrate', CRD, '--kubeconfig', dead, '--timeout', '2']);
      expect(expectOneLineError(r)).toMatch(
        new RegExp(
          `^annex: cannot connect to the API server at https://127.0.0.1:${deadPort}: .*ECONNREFUSED`,
        ),
      );
    } finally {
      rmSync(dead, { force: true });
    }
  });
});
