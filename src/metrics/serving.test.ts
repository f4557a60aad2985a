// The metrics group served by the framework over real HTTP: what a list, get, Table and
// watch carry as creationTimestamp (the response time, as metrics-server), byte for byte.
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aggregatedApi, requestInfoMiddleware } from '../apiserver/handler.js';
import { createLogger } from '../log.js';
import { statusErrors } from '../server/errors.js';
import { metricsGroups, metricsK8sIoGroup } from './group.js';
import type { MetricsBatch } from './points.js';
import { MetricsStore } from './storage.js';

const S = 1_000_000_000n;
const T0 = BigInt(Date.parse('2026-03-01T09:59:00Z') / 1000);
/** A scrape `ts` seconds after T0 with `cpu` CPU-seconds used so far. */
const scrape = (ts: bigint, cpu: bigint, memory = 2 ** 20): MetricsBatch => ({
  nodes: [{ name: 'n1', point: { startNs: 0n, tsNs: (T0 + ts) * S, cpuNs: cpu * S, memory } }],
  pods: [
    {
      namespace: 'ns',
      name: 'p1',
      labels: { app: 'web' },
      containers: new Map([['c', { startNs: S, tsNs: (T0 + ts) * S, cpuNs: cpu * S, memory }]]),
    },
  ],
});

let clock = Date.parse('2026-03-01T10:00:00.400Z');
const store = new MetricsStore({
  resolutionMs: 15_000,
  now: () => Date.parse('2026-03-01T09:59:59Z'),
});
store.store(scrape(0n, 10n));
store.store(scrape(15n, 13n));
let base = '';
let server: ReturnType<Koa['listen']>;

beforeAll(async () => {
  const app = new Koa();
  app.silent = true;
  app.use(statusErrors(createLogger('silent')));
  app.use(requestInfoMiddleware());
  const { nodes, pods } = store;
  const groups = [metricsGroups({ nodes, pods }), metricsK8sIoGroup({ nodes, pods })];
  app.use(aggregatedApi(groups, { now: () => new Date(clock) }));
  server = app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

function get(path: string, accept = 'application/json'): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}${path}`, { headers: { accept } }, (res) => {
      let text = '';
      res.on('data', (c) => {
        text += String(c);
        // A watch goes on: its first event is enough.
        if (path.includes('watch=1') && text.includes('\n')) {
          resolve(text.slice(0, text.indexOf('\n')));
          res.destroy();
        }
      });
      res.on('end', () => resolve(text));
    });
    req.on('error', reject);
    req.end();
  });
}

const podJson = (apiVersion: string, rv: string, created: string) =>
  `{"kind":"PodMetrics","apiVersion":"${apiVersion}","metadata":{"name":"p1","namespace":"ns",` +
  `"resourceVersion":"${rv}","creationTimestamp":"${created}","labels":{"app":"web"}},` +
  `"timestamp":"2026-03-01T09:59:15Z","window":"15s",` +
  `"containers":[{"name":"c","usage":{"cpu":"200m","memory":"1Mi"}}]}`;

describe('metrics group: creationTimestamp is the response time', () => {
  it('in lists and gets, byte for byte, second after second at one resourceVersion', async () => {
    const rv = store.resourceVersion;
    const pod = (created: string) => podJson('metrics.annex.dev/v1beta1', '2', created);
    clock = Date.parse('2026-03-01T10:00:00.400Z');
    expect(await get('/apis/metrics.annex.dev/v1beta1/pods')).toBe(
      `{"kind":"PodMetricsList","apiVersion":"metrics.annex.dev/v1beta1",` +
        `"metadata":{"resourceVersion":"${rv}"},"items":[${pod('2026-03-01T10:00:00Z')}]}`,
    );
    clock += 5_000;
    const list = JSON.parse(await get('/apis/metrics.annex.dev/v1beta1/pods'));
    expect(list.items[0].metadata.creationTimestamp).toBe('2026-03-01T10:00:05Z');
    expect(await get('/apis/metrics.annex.dev/v1beta1/namespaces/ns/pods/p1')).toBe(
      pod('2026-03-01T10:00:05Z'),
    );
    clock += 1_000;
    expect(await get('/apis/metrics.k8s.io/v1beta1/namespaces/ns/pods/p1')).toBe(
      podJson('metrics.k8s.io/v1beta1', '2', '2026-03-01T10:00:06Z'),
    );
  });

  it('in Table rows and watch events', async () => {
    clock = Date.parse('2026-03-01T11:00:00Z');
    const table = JSON.parse(
      await get(
        '/apis/metrics.annex.dev/v1beta1/nodes',
        'application/json;as=Table;v=v1;g=meta.k8s.io',
      ),
    );
    expect(table.rows[0].object.metadata.creationTimestamp).toBe('2026-03-01T11:00:00Z');
    const event = JSON.parse(await get('/apis/metrics.annex.dev/v1beta1/nodes?watch=1'));
    expect(event).toMatchObject({
      type: 'ADDED',
      object: { metadata: { name: 'n1', creationTimestamp: '2026-03-01T11:00:00Z' } },
    });
  });

  it('an object unchanged by a scrape keeps its version; a changed one gets the new time', async () => {
    clock = Date.parse('2026-03-01T12:00:00Z');
    store.store(scrape(15n, 13n)); // the kubelet repeats its sample: nothing changes
    const same = JSON.parse(await get('/apis/metrics.annex.dev/v1beta1/namespaces/ns/pods/p1'));
    expect(same.metadata).toMatchObject({
      resourceVersion: '2',
      creationTimestamp: '2026-03-01T12:00:00Z',
    });
    store.store(scrape(30n, 16n, 2 ** 21));
    const changed = JSON.parse(await get('/apis/metrics.annex.dev/v1beta1/namespaces/ns/pods/p1'));
    expect(changed.metadata.resourceVersion).not.toBe('2');
    expect(changed.containers[0].usage.memory).toBe('2Mi');
    expect(changed.metadata.creationTimestamp).toBe('2026-03-01T12:00:00Z');
  });
});
