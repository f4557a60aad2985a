// The two metric groups through the framework's handler over real HTTP: the paths the
// HPA's clients call (k8s.io/metrics external_metrics and custom_metrics), the answers
// and the errors.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aggregatedApi, requestInfoMiddleware } from '../apiserver/handler.js';
import { createLogger } from '../log.js';
import { statusErrors } from '../server/errors.js';
import { customMetricsGroup, externalMetricsGroup, guessResource } from './groups.js';
import { OutboundPolicy } from './outbound.js';
import { MetricPoller, type PollContext } from './poller.js';
import type { ExternalMetric } from './types.js';

let source: Server;
let app: Server;
let base: string;
const value = '{"depth": 6}';
const pollers: MetricPoller[] = [];
// The test source is on loopback: allowed by naming it, as an admin would.
const local: PollContext = {
  kube: null,
  outbound: OutboundPolicy.from({ urls: [], hosts: [], cidrs: ['127.0.0.1/32'] }),
  reviewer: null,
};

const metric = (name: string, spec: ExternalMetric['spec'], ns = 'shop'): ExternalMetric => ({
  metadata: { name, namespace: ns, generation: 1 },
  spec: { intervalSeconds: 5, ...spec },
});

beforeAll(async () => {
  source = createServer((req, res) => res.end(req.url === '/bad' ? 'nope' : value));
  await new Promise<void>((r) => source.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(source.address() as AddressInfo).port}`;
  const json = (path = '$.depth', u = url) => ({ url: `${u}/`, path });
  pollers.push(
    new MetricPoller(
      metric('q-jobs', { metricName: 'queue', metricLabels: { queue: 'jobs' }, json: json() }),
      local,
    ),
    new MetricPoller(
      metric('q-mail', { metricName: 'queue', metricLabels: { queue: 'mail' }, json: json() }),
      local,
    ),
    new MetricPoller(metric('broken', { json: { url: `${url}/bad`, path: '$.depth' } }), local),
    new MetricPoller(metric('q-other-ns', { metricName: 'queue', json: json() }, 'other'), local),
    new MetricPoller(
      metric('web-rps', {
        metricName: 'requests_per_second',
        describedObject: { apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', name: 'web' },
        json: json(),
      }),
      local,
    ),
    new MetricPoller(
      metric('ns-load', {
        metricName: 'load',
        describedObject: { apiVersion: 'v1', kind: 'Namespace', name: 'shop' },
        json: json(),
      }),
      local,
    ),
  );
  for (const p of pollers) await p.poll();
  const koa = new Koa();
  koa.silent = true;
  koa.use(statusErrors(createLogger('silent')));
  koa.use(requestInfoMiddleware());
  koa.use(aggregatedApi([externalMetricsGroup(() => pollers), customMetricsGroup(() => pollers)]));
  app = createServer(koa.callback());
  await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(app.address() as AddressInfo).port}`;
});
afterAll(() => {
  for (const p of pollers) p.stop();
  for (const s of [source, app]) {
    s.closeAllConnections();
    s.close();
  }
});

const get = async (path: string, init: RequestInit = {}) => {
  const r = await fetch(`${base}${path}`, init);
  return { status: r.status, body: (await r.json()) as any };
};
const ext = '/apis/external.metrics.k8s.io/v1beta1';
const custom = '/apis/custom.metrics.k8s.io/v1beta2';

describe('external.metrics.k8s.io/v1beta1', () => {
  it('lists the values of a metric in a namespace, filtered by labelSelector on metricLabels', async () => {
    const all = await get(`${ext}/namespaces/shop/queue`);
    expect(all.status).toBe(200);
    expect(all.body).toMatchObject({
      kind: 'ExternalMetricValueList',
      apiVersion: 'external.metrics.k8s.io/v1beta1',
      metadata: {},
    });
    expect(all.body.items).toHaveLength(2);
    const one = await get(
      `${ext}/namespaces/shop/queue?labelSelector=${encodeURIComponent('queue=jobs')}`,
    );
    expect(one.body.items).toEqual([
      {
        metricName: 'queue',
        metricLabels: { queue: 'jobs' },
        timestamp: expect.any(String),
        window: 5,
        value: '6',
      },
    ]);
  });

  it('answers 404 for an unknown metric, 503 with the reason for a failing source, 400 for a bad selector', async () => {
    const missing = await get(`${ext}/namespaces/shop/nothing`);
    expect(missing).toMatchObject({
      status: 404,
      body: {
        reason: 'NotFound',
        message: 'the server could not find the metric nothing for namespace shop',
      },
    });
    const broken = await get(`${ext}/namespaces/shop/broken`);
    expect(broken.status).toBe(503);
    expect(broken.body.message).toMatch(
      /^metric broken is unavailable \(ExternalMetric shop\/broken\): the body is not JSON/,
    );
    const bad = await get(
      `${ext}/namespaces/shop/queue?labelSelector=${encodeURIComponent('a b')}`,
    );
    expect(bad).toMatchObject({ status: 400, body: { reason: 'BadRequest' } });
  });

  it('publishes a placeholder resource in discovery, refuses writes and watch', async () => {
    const list = await get(ext);
    expect(list.body.resources).toEqual([
      expect.objectContaining({
        name: 'externalmetrics',
        kind: 'ExternalMetricValueList',
        namespaced: true,
        verbs: ['get'],
      }),
    ]);
    expect((await get(`${ext}/namespaces/shop/queue`, { method: 'POST', body: '{}' })).status).toBe(
      405,
    );
    expect((await get(`${ext}/namespaces/shop/queue?watch=1`)).status).toBe(405);
  });
});

describe('custom.metrics.k8s.io/v1beta2', () => {
  it('answers an object metric with exactly one MetricValue and its describedObject', async () => {
    const r = await get(
      `${custom}/namespaces/shop/ingresses.networking.k8s.io/web/requests_per_second`,
    );
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      kind: 'MetricValueList',
      apiVersion: 'custom.metrics.k8s.io/v1beta2',
      metadata: {},
      items: [
        {
          describedObject: {
            kind: 'Ingress',
            namespace: 'shop',
            name: 'web',
            apiVersion: 'networking.k8s.io/v1',
          },
          metric: { name: 'requests_per_second' },
          timestamp: expect.any(String),
          windowSeconds: 5,
          value: '6',
        },
      ],
    });
  });

  it('answers a metric of the namespace itself, and 404 for another object', async () => {
    const r = await get(`${custom}/namespaces/shop/metrics/load`);
    expect(r.body.items[0].describedObject).toEqual({
      kind: 'Namespace',
      name: 'shop',
      apiVersion: 'v1',
    });
    const other = await get(
      `${custom}/namespaces/shop/ingresses.networking.k8s.io/api/requests_per_second`,
    );
    expect(other.body.message).toBe(
      'the server could not find the metric requests_per_second for ingresses.networking.k8s.io shop/api',
    );
  });
});

it('guesses resources as apimachinery does', () => {
  expect(['Ingress', 'Deployment', 'NetworkPolicy'].map(guessResource)).toEqual([
    'ingresses',
    'deployments',
    'networkpolicies',
  ]);
});
