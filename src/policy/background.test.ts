import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../core/types.js';
import type { KubeClient } from '../kube/client.js';
import { createLogger } from '../log.js';
import { BackgroundScanner, cacheState, type Caches } from './background.js';
import type { CacheEvent, CacheSize } from './kind-caches.js';
import { kindKey, type ScanKind } from './scan.js';
import { policyState } from './state.js';
import type { AdmissionPolicy } from './types.js';

const DEPLOYMENTS: ScanKind = {
  group: 'apps',
  version: 'v1',
  resource: 'deployments',
  kind: 'Deployment',
};
const NAMESPACES: ScanKind = {
  group: '',
  version: 'v1',
  resource: 'namespaces',
  kind: 'Namespace',
};

/** Caches filled by the test; sync() only records which kinds are watched. */
class FakeCaches implements Caches {
  readonly objects = new Map<string, [ScanKind, KubeObject]>();
  watched: string[] = [];
  emit: (e: CacheEvent) => void = () => {};
  sync(kinds: readonly ScanKind[]) {
    this.watched = kinds.map(kindKey);
  }
  *entries(): Iterable<[ScanKind, KubeObject]> {
    for (const e of this.objects.values()) if (this.watched.includes(kindKey(e[0]))) yield e;
  }
  sizes(): CacheSize[] {
    return [];
  }
  stop() {}
  put(k: ScanKind, o: KubeObject, emit = true) {
    this.objects.set(`${o.metadata.namespace}/${o.metadata.name}`, [k, o]);
    if (emit) this.emit({ type: 'changed', kind: k, object: o });
  }
  remove(k: ScanKind, o: KubeObject) {
    this.objects.delete(`${o.metadata.namespace}/${o.metadata.name}`);
    this.emit({ type: 'deleted', kind: k, object: o });
  }
}

const pinned: AdmissionPolicy = {
  apiVersion: 'policy.annex.dev/v1alpha1',
  kind: 'AdmissionPolicy',
  metadata: { name: 'pinned', generation: 1, uid: 'p1' },
  spec: {
    match: { kinds: ['apps/Deployment'] },
    validate: [
      {
        name: 'tag',
        path: '$.spec.template.spec.containers[*].image',
        schema: { type: 'string', pattern: ':(?!latest$)[^:/]+$' },
      },
    ],
  },
};
const labelled: AdmissionPolicy = {
  apiVersion: 'policy.annex.dev/v1alpha1',
  kind: 'AdmissionPolicy',
  metadata: { name: 'team', generation: 1, uid: 'p2' },
  spec: {
    match: { kinds: ['Namespace'] },
    actions: ['Audit'],
    validate: [{ name: 'team', path: '$.metadata.labels.team', required: true }],
  },
};

const deployment = (namespace: string, name: string, image: string): KubeObject => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name, namespace, uid: `${namespace}-${name}` },
  spec: { template: { spec: { containers: [{ name: 'c', image }] } } },
});

/** Past the scanner's debounce (200 ms) and flush (100 ms). */
const settle = () => new Promise((r) => setTimeout(r, 350));

function scanner(policies: AdmissionPolicy[]) {
  const state = policyState();
  for (const p of policies) state.set.put(p);
  const caches = new FakeCaches();
  const s = new BackgroundScanner(state, { annexNamespace: 'annex-system', resyncSeconds: 3600 });
  s.start({} as KubeClient, createLogger('silent'), (onEvent) => {
    caches.emit = onEvent;
    return caches;
  });
  return { s, state, caches };
}

const reportOf = (s: BackgroundScanner, ns: string) =>
  s.namespaced.snapshot().items.find((r) => r.metadata.namespace === ns) as any;

describe('BackgroundScanner', () => {
  it('reports the objects that existed before the scan, per namespace; never kube-system', async () => {
    const { s, caches } = scanner([pinned]);
    caches.put(DEPLOYMENTS, deployment('shop', 'web', 'nginx:latest'), false);
    caches.put(DEPLOYMENTS, deployment('shop', 'api', 'nginx:1.27'), false);
    caches.put(DEPLOYMENTS, deployment('kube-system', 'dns', 'dns:latest'), false);
    s.policiesChanged();
    await settle();
    expect(caches.watched).toEqual(['apps/v1/deployments']);
    expect(s.namespaced.snapshot().items.map((r) => r.metadata.namespace)).toEqual(['shop']);
    expect(reportOf(s, 'shop').summary).toEqual({ pass: 1, fail: 1, warn: 0, error: 0, skip: 0 });
    s.stop();
  });

  it('follows object changes; a resync that changes nothing emits nothing', async () => {
    const { s, caches } = scanner([pinned]);
    await settle();
    caches.put(DEPLOYMENTS, deployment('shop', 'web', 'nginx:latest'));
    await settle();
    expect(reportOf(s, 'shop').summary.fail).toBe(1);
    caches.put(DEPLOYMENTS, deployment('shop', 'web', 'nginx:1.27'));
    await settle();
    expect(reportOf(s, 'shop').summary).toMatchObject({ pass: 1, fail: 0 });
    const rv = s.namespaced.resourceVersion;
    s.policiesChanged(); // a full pass over the same objects
    await settle();
    expect(s.namespaced.resourceVersion).toBe(rv);
    s.stop();
  });

  it('drops the report of a namespace whose last object goes, and all when the policy goes', async () => {
    const { s, state, caches } = scanner([pinned]);
    await settle();
    const web = deployment('shop', 'web', 'nginx:latest');
    caches.put(DEPLOYMENTS, web);
    caches.put(DEPLOYMENTS, deployment('blog', 'web', 'nginx:latest'));
    await settle();
    caches.remove(DEPLOYMENTS, web);
    await settle();
    expect(s.namespaced.snapshot().items.map((r) => r.metadata.namespace)).toEqual(['blog']);
    state.set.delete('pinned');
    s.policiesChanged();
    await settle();
    expect(caches.watched).toEqual([]);
    expect(s.namespaced.snapshot().items).toEqual([]);
    s.stop();
  });

  it('cluster-scoped objects go to the ClusterPolicyReport', async () => {
    const { s, caches } = scanner([labelled]);
    caches.put(
      NAMESPACES,
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop' } },
      false,
    );
    s.policiesChanged();
    await settle();
    const [cluster] = s.cluster.snapshot().items as any[];
    expect(cluster.kind).toBe('ClusterPolicyReport');
    expect(cluster.results[0]).toMatchObject({
      policy: 'team',
      result: 'fail',
      resources: [{ apiVersion: 'v1', kind: 'Namespace', name: 'shop' }],
    });
    s.stop();
  });

  it("a namespaceSelector follows the namespace's labels when they change", async () => {
    const selective: AdmissionPolicy = {
      ...pinned,
      metadata: { name: 'pinned-team-a', generation: 1, uid: 'p3' },
      spec: {
        ...pinned.spec,
        match: { ...pinned.spec.match, namespaceSelector: { matchLabels: { team: 'a' } } },
      },
    };
    const { s, state, caches } = scanner([selective]);
    state.namespaceLabels.set('shop', { 'kubernetes.io/metadata.name': 'shop' });
    caches.put(DEPLOYMENTS, deployment('shop', 'web', 'nginx:latest'), false);
    s.policiesChanged();
    await settle();
    expect(s.namespaced.snapshot().items).toEqual([]);
    state.namespaceLabels.set('shop', { 'kubernetes.io/metadata.name': 'shop', team: 'a' });
    s.policiesChanged(); // what the controller calls on a label change
    await settle();
    expect(reportOf(s, 'shop').summary.fail).toBe(1);
    s.stop();
  });

  it('/readyz?verbose: objects per kind, and why a kind cannot be listed', () => {
    const size = { resource: 'pods', objects: 12, synced: true, error: '' };
    expect(cacheState(size)).toBe('12');
    expect(cacheState({ ...size, objects: 0, synced: false, error: 'forbidden' })).toBe(
      'not listed yet (forbidden: annex may not list or watch it)',
    );
    const { s, caches } = scanner([pinned]);
    caches.sizes = () => [
      size,
      { resource: 'apps/deployments', objects: 3, synced: true, error: '' },
    ];
    expect(s.report()).toBe('scan caches: pods 12, apps/deployments 3');
    s.stop();
  });
});
