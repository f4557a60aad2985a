// annex's small Kubernetes client against the real kube-apiserver: kubeconfig credentials
// (client certificate, token file), JSON round trips, every patch type, Status errors,
// and watches (list then stream, or resume from a version). The 410 → relist path needs a
// compacted history, which a fresh etcd does not have: src/kube/client.test.ts covers it.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { KubeApiError, KubeClient, type WatchEvent } from '../../src/kube/client.js';
import { loadKubeconfig } from '../../src/kube/kubeconfig.js';
import { createNamespace, describeCluster, kubectlOk } from '../cluster/harness.js';

interface ConfigMap {
  metadata: {
    name: string;
    namespace?: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
  };
  data?: Record<string, string>;
}

describeCluster('kube client', (c) => {
  let ns: string;
  let admin: KubeClient;
  const tmp = mkdtempSync(join(tmpdir(), 'annex-kube-'));
  const cms = () => `/api/v1/namespaces/${ns}/configmaps`;

  beforeAll(async () => {
    ns = await createNamespace('kc');
    admin = new KubeClient(loadKubeconfig(c.adminKubeconfig));
  });
  afterAll(() => {
    admin?.close();
    rmSync(tmp, { recursive: true, force: true });
  });

  it('reads the server version over the client certificate', async () => {
    const v = await admin.get<{ gitVersion: string }>('/version');
    expect(v.gitVersion).toBe(`v${c.version}`);
  });

  it('creates, gets, lists with a selector and patches with every patch type', async () => {
    const created = await admin.create<ConfigMap>(cms(), {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'one', labels: { app: 'annex' } },
      data: { a: '1' },
    });
    expect(created.metadata.resourceVersion).toMatch(/^\d+$/);
    await admin.create(cms(), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'two' } });

    const list = await admin.list<ConfigMap>(cms(), { labelSelector: 'app=annex' });
    expect(list.items.map((i) => i.metadata.name)).toEqual(['one']);
    expect(list.metadata.resourceVersion).toMatch(/^\d+$/);

    await admin.patch(`${cms()}/one`, { data: { b: '2' } }, 'merge');
    await admin.patch(`${cms()}/one`, [{ op: 'add', path: '/data/c', value: '3' }], 'json');
    await admin.patch(`${cms()}/one`, { data: { d: '4' } }, 'strategic');
    await admin.patch(
      `${cms()}/one`,
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'one' }, data: { e: '5' } },
      'apply',
      { fieldManager: 'annex-test', force: true },
    );
    const got = await admin.get<ConfigMap & { metadata: { managedFields: { manager: string }[] } }>(
      `${cms()}/one`,
    );
    expect(got.data).toEqual({ a: '1', b: '2', c: '3', d: '4', e: '5' });
    expect(got.metadata.managedFields.map((m) => m.manager)).toContain('annex-test');
  });

  it('turns failures into KubeApiError with the server Status', async () => {
    const err = await admin
      .create(cms(), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'one' } })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KubeApiError);
    expect((err as KubeApiError).status).toMatchObject({
      code: 409,
      reason: 'AlreadyExists',
      message: 'configmaps "one" already exists',
    });
    await expect(admin.get(`${cms()}/missing`)).rejects.toMatchObject({
      code: 404,
      reason: 'NotFound',
      message: `GET ${cms()}/missing: 404 NotFound: configmaps "missing" not found`,
    });

    const jane = new KubeClient(loadKubeconfig(c.userKubeconfig));
    try {
      await expect(jane.list(cms())).rejects.toMatchObject({
        code: 403,
        status: {
          reason: 'Forbidden',
          message: `configmaps is forbidden: User "jane" cannot list resource "configmaps" in API group "" in the namespace "${ns}"`,
        },
      });
    } finally {
      jane.close();
    }
  });

  it('authenticates with a ServiceAccount token read from a tokenFile', async () => {
    const token = (await kubectlOk(['create', 'token', 'default', '-n', ns])).trim();
    writeFileSync(join(tmp, 'token'), token);
    const kc = join(tmp, 'sa.kubeconfig');
    writeFileSync(
      kc,
      stringify({
        apiVersion: 'v1',
        kind: 'Config',
        'current-context': 'sa',
        contexts: [{ name: 'sa', context: { cluster: 'test', user: 'sa' } }],
        clusters: [
          { name: 'test', cluster: { server: c.server, 'certificate-authority': c.servingCaFile } },
        ],
        users: [{ name: 'sa', user: { tokenFile: 'token' } }],
      }),
    );
    const sa = new KubeClient(loadKubeconfig(kc));
    try {
      const review = await sa.create<{ status: { userInfo: { username: string } } }>(
        '/apis/authentication.k8s.io/v1/selfsubjectreviews',
        { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
      );
      expect(review.status.userInfo.username).toBe(`system:serviceaccount:${ns}:default`);
    } finally {
      sa.close();
    }
  });

  it('watches: a first list, then ADDED / MODIFIED / DELETED in order', async () => {
    const events: WatchEvent<ConfigMap>[] = [];
    const errors: Error[] = [];
    const stop = admin.watch<ConfigMap>(
      cms(),
      { query: { labelSelector: 'w=1' } },
      (e) => events.push(e),
      (e) => errors.push(e),
    );
    try {
      await admin.create(cms(), {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'pre', labels: { w: '1' } },
      });
      await waitFor(() => events.some((e) => e.type === 'RELISTED'));
      await waitFor(() =>
        events.some((e) => e.type === 'ADDED' || (e.type === 'RELISTED' && e.items.length > 0)),
      );
      await admin.create(cms(), {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'w', labels: { w: '1' } },
      });
      await admin.patch(`${cms()}/w`, { data: { x: 'y' } }, 'merge');
      await admin.delete(`${cms()}/w`);
      await waitFor(() => events.some((e) => e.type === 'DELETED'));
      const forW = events
        .filter((e) => e.type !== 'RELISTED' && e.object.metadata.name === 'w')
        .map((e) => e.type);
      expect(forW).toEqual(['ADDED', 'MODIFIED', 'DELETED']);
      expect(events[0]?.type).toBe('RELISTED');
      expect(errors).toEqual([]);
    } finally {
      stop();
    }
  });

  it('resumes from a given resourceVersion: only later changes arrive, no list', async () => {
    const from = (await admin.list<ConfigMap>(cms())).metadata.resourceVersion!;
    await admin.create(cms(), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'later' } });
    const events: WatchEvent<ConfigMap>[] = [];
    const errors: Error[] = [];
    const stop = admin.watch<ConfigMap>(
      cms(),
      { resourceVersion: from },
      (e) => events.push(e),
      (e) => errors.push(e),
    );
    try {
      await waitFor(() => events.length > 0);
      expect(events.map((e) => e.type !== 'RELISTED' && [e.type, e.object.metadata.name])).toEqual([
        ['ADDED', 'later'],
      ]);
      expect(errors).toEqual([]);
    } finally {
      stop();
    }
  });
});

async function waitFor(cond: () => boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}
