// The install and uninstall against a fake API server: which APIServices they leave alone.
import { describe, expect, it } from 'vitest';
import type { KubeClient } from '../kube/client.js';
import { KubeApiError } from '../kube/errors.js';
import { applyBundle, uninstall } from './apply.js';
import type { Obj } from './bundle.js';

const service = { kind: 'Service', metadata: { name: 'annex', namespace: 'annex-system' } };
const placeholder = {
  apiVersion: 'apiregistration.k8s.io/v1',
  kind: 'APIService',
  metadata: { name: 'v1beta1.external.metrics.k8s.io' },
  spec: { group: 'external.metrics.k8s.io', service: { namespace: 'annex-system', name: 'annex' } },
};
const keda = {
  metadata: {
    name: 'v1beta1.external.metrics.k8s.io',
    labels: { 'app.kubernetes.io/name': 'annex' },
  },
  spec: { group: 'external.metrics.k8s.io', service: { namespace: 'keda', name: 'keda-metrics' } },
};
const ours = {
  metadata: { name: 'v1beta1.metrics.annex.dev', labels: { 'app.kubernetes.io/name': 'annex' } },
  spec: { group: 'metrics.annex.dev', service: { namespace: 'annex-system', name: 'annex' } },
};

/** Holds APIServices only; records deletes. */
function fakeKube(apiServices: Obj[]) {
  const deleted: string[] = [];
  const kube = {
    create: async (path: string) => {
      throw new KubeApiError('POST', path, {
        kind: 'Status',
        apiVersion: 'v1',
        status: 'Failure',
        code: 409,
        reason: 'AlreadyExists',
        message: 'exists',
      } as never);
    },
    patch: async () => ({}),
    get: async (path: string) => apiServices.find((a) => path.endsWith(`/${a.metadata.name}`)),
    list: async (path: string) => ({
      items: path.includes('apiservices')
        ? apiServices.filter((a) => !deleted.includes(a.metadata.name))
        : [],
    }),
    delete: async (path: string) => {
      deleted.push(path.split('/').pop()!);
      return {};
    },
  } as unknown as KubeClient;
  return { kube, deleted };
}

describe('APIServices of another owner', () => {
  it('install keeps an existing one and says whose it is', async () => {
    const { kube } = fakeKube([keda]);
    const said: string[] = [];
    await applyBundle(kube, [service, placeholder], (l) => said.push(l));
    expect(said).toContainEqual(
      expect.stringMatching(
        /^kept apiservice\/v1beta1\.external\.metrics\.k8s\.io: external\.metrics\.k8s\.io not registered: already served by another owner \(APIService v1beta1\.external\.metrics\.k8s\.io → keda\/keda-metrics\)/,
      ),
    );
  });

  it("uninstall deletes annex's own and never one that points at another Service", async () => {
    const { kube, deleted } = fakeKube([keda, ours]);
    const said: string[] = [];
    await uninstall(kube, [service], (l) => said.push(l), 0);
    expect(deleted).toEqual(['v1beta1.metrics.annex.dev']);
    expect(said).toEqual(['deleted apiservice/v1beta1.metrics.annex.dev']);
  });
});
