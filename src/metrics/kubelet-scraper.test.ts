// Tests against a real HTTPS "test kubelet" on 127.0.0.1 (the only address any test dials),
// with certificates issued by src/certs.
import { readFileSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCa, issue, type CertAndKey } from '../certs/index.js';
import { createLogger } from '../log.js';
import { kubeletTarget, type NodeLike } from './kubelet-client.js';
import { KubeletScraper, type KubeletScraperOptions } from './kubelet-scraper.js';
import type { MetricsBatch } from './points.js';
import { MetricsStore } from './storage.js';
import { lateness } from '../../test/unit/lateness.js';

const read = (f: string) => readFileSync(new URL(`./fixtures/${f}`, import.meta.url), 'utf8');
const bodies = [read('kubelet-resource-metrics-a.txt'), read('kubelet-resource-metrics.txt')];
const TOKEN = 'test-token';

interface TestKubelet {
  port: number;
  requests: number;
  maxInFlight: number;
  /** Per-test behaviour; default serves scrape A then B (then B again). */
  handler?: (
    req: import('node:http').IncomingMessage,
    res: import('node:http').ServerResponse,
  ) => void;
  delayMs: number;
  server: https.Server;
}

let ca: CertAndKey;
let client: CertAndKey;
let serving: CertAndKey;
const servingTls = (): https.ServerOptions => ({ cert: serving.certPem, key: serving.keyPem });
let kubelet: TestKubelet;

async function startKubelet(opts: https.ServerOptions): Promise<TestKubelet> {
  const k = { requests: 0, maxInFlight: 0, delayMs: 0 } as TestKubelet;
  let inFlight = 0;
  k.server = https.createServer(opts, (req, res) => {
    inFlight++;
    k.maxInFlight = Math.max(k.maxInFlight, inFlight);
    res.on('close', () => inFlight--);
    setTimeout(() => {
      if (k.handler) return k.handler(req, res);
      if (req.headers.authorization !== `Bearer ${TOKEN}`) {
        res.writeHead(401).end('Unauthorized');
        return;
      }
      if (req.url !== '/metrics/resource') {
        res.writeHead(404).end();
        return;
      }
      const body = bodies[Math.min(k.requests++, 1)];
      res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' }).end(body);
    }, k.delayMs);
  });
  await new Promise<void>((r) => k.server.listen(0, '127.0.0.1', r));
  k.port = (k.server.address() as AddressInfo).port;
  return k;
}

const node = (name: string, port: number, extra: Partial<NodeLike['metadata']> = {}): NodeLike => ({
  metadata: { name, labels: { 'kubernetes.io/hostname': name }, ...extra },
  status: {
    addresses: [
      { type: 'Hostname', address: 'never-dialled.invalid' },
      { type: 'InternalIP', address: '127.0.0.1' },
    ],
    daemonEndpoints: { kubeletEndpoint: { Port: port } },
  },
});

function logCapture() {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const l of chunk.toString().split('\n')) if (l) lines.push(JSON.parse(l));
      cb();
    },
  });
  return { lines, log: createLogger('debug', stream) };
}

function scraper(overrides: Partial<KubeletScraperOptions> & { nodes: NodeLike[] }) {
  const batches: MetricsBatch[] = [];
  const registry = new Registry();
  const { lines, log } = logCapture();
  const s = new KubeletScraper({
    listNodes: async () => overrides.nodes,
    onBatch: (b) => batches.push(b),
    tls: { ca: ca.certPem },
    bearerToken: () => TOKEN,
    stagger: false,
    timeoutSeconds: 2,
    registry,
    log,
    ...overrides,
  });
  return { s, batches, registry, lines };
}

beforeAll(async () => {
  ca = await createCa({ commonName: 'test-kubelet-ca' });
  serving = await issue({
    ca,
    commonName: 'test-kubelet',
    usages: ['serverAuth'],
    ipAddresses: ['127.0.0.1'],
  });
  client = await issue({ ca, commonName: 'annex', usages: ['clientAuth'] });
  kubelet = await startKubelet(servingTls());
});

afterAll(async () => {
  await new Promise((r) => kubelet.server.close(r));
});

describe('kubeletTarget', () => {
  const n: NodeLike = {
    metadata: { name: 'n' },
    status: {
      addresses: [
        { type: 'Hostname', address: 'host' },
        { type: 'ExternalIP', address: '203.0.113.9' },
        { type: 'InternalIP', address: '10.0.0.1' },
        { type: 'InternalIP', address: '10.0.0.2' },
      ],
    },
  };
  it('takes the first address of the first preferred type; port 10250 without node status', () => {
    expect(kubeletTarget(n)).toEqual({ host: '10.0.0.1', port: 10250, path: '/metrics/resource' });
    expect(kubeletTarget(n, ['Hostname', 'InternalIP']).host).toBe('host');
  });
  it('honours the path annotation and the status port', () => {
    const annotated: NodeLike = {
      metadata: { name: 'n', annotations: { 'metrics.k8s.io/resource-metrics-path': '/x' } },
      status: { ...n.status, daemonEndpoints: { kubeletEndpoint: { Port: 10255 } } },
    };
    expect(kubeletTarget(annotated)).toMatchObject({ port: 10255, path: '/x' });
  });
  it('fails like metrics-server when no type matches', () => {
    expect(() => kubeletTarget(n, ['InternalDNS'])).toThrow(
      'no address matched types [InternalDNS]',
    );
  });
});

describe('KubeletScraper against a local HTTPS kubelet', () => {
  it('verifies TLS with the CA, sends the token and computes rates over two ticks', async () => {
    kubelet.requests = 0;
    const { s, batches } = scraper({ nodes: [node('worker-1', kubelet.port)] });
    const store = new MetricsStore({ resolutionMs: 15_000 });
    await s.tick();
    await s.tick();
    await s.stop();
    expect(batches).toHaveLength(2);
    for (const b of batches) store.store(b);
    const [n] = (await store.nodes.snapshot()).items;
    expect(n).toMatchObject({
      metadata: { name: 'worker-1', labels: { 'kubernetes.io/hostname': 'worker-1' } },
      window: '15.013s',
      usage: { cpu: '249957861n', memory: '2786616Ki' },
    });
    expect((await store.pods.snapshot()).items).toHaveLength(2);
  });

  it('fails a node whose kubelet certificate is not trusted, logs it once and counts it', async () => {
    const { s, batches, registry, lines } = scraper({
      nodes: [node('untrusted', kubelet.port)],
      tls: {},
    });
    await s.tick();
    await s.stop();
    expect(batches[0]?.nodes).toEqual([]);
    const errors = lines.filter((l) => l.msg === 'Failed to scrape node');
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ node: 'untrusted' });
    expect(String(errors[0]?.err)).toMatch(
      /GET "https:\/\/127\.0\.0\.1:\d+\/metrics\/resource": .*certificate/,
    );
    expect(await registry.getSingleMetricAsString('annex_metrics_scrape_failures_total')).toContain(
      'annex_metrics_scrape_failures_total{node="untrusted"} 1',
    );
    expect(
      await registry.getSingleMetricAsString('annex_metrics_scrape_duration_seconds'),
    ).toContain('annex_metrics_scrape_duration_seconds_count 1');
  });

  it('scrapes a self-signed kubelet only with insecureSkipTLSVerify', async () => {
    kubelet.requests = 0;
    const { s, batches } = scraper({
      nodes: [node('minikube', kubelet.port)],
      tls: { insecureSkipTLSVerify: true },
    });
    await s.tick();
    await s.stop();
    expect(batches[0]?.nodes.map((n) => n.name)).toEqual(['minikube']);
  });

  it('rejects a CA together with insecureSkipTLSVerify, and a timeout above the interval', () => {
    expect(() =>
      scraper({ nodes: [], tls: { ca: ca.certPem, insecureSkipTLSVerify: true } }),
    ).toThrow(/cannot be used together/);
    expect(() => scraper({ nodes: [], intervalSeconds: 10, timeoutSeconds: 10 })).toThrow(
      /interval/,
    );
  });

  it('reports a non-200 status without the body', async () => {
    const { s, batches, lines } = scraper({
      nodes: [node('n', kubelet.port)],
      bearerToken: () => 'wrong',
    });
    await s.tick();
    await s.stop();
    expect(batches[0]?.nodes).toEqual([]);
    const err = String(lines.find((l) => l.msg === 'Failed to scrape node')?.err);
    expect(err).toContain('request failed, status: "401 Unauthorized"');
    expect(JSON.stringify(lines)).not.toContain('"Unauthorized"}'); // no body text logged
  });

  it('fails the node on a corrupt body, keeps the others', async () => {
    const broken = await startKubelet({ ...servingTls() });
    broken.handler = (_req, res) => res.writeHead(200).end('node_cpu_usage_seconds_total{ 1\n');
    kubelet.requests = 0;
    const { s, batches, lines } = scraper({
      nodes: [node('good', kubelet.port), node('bad', broken.port)],
    });
    await s.tick();
    await s.stop();
    await new Promise((r) => broken.server.close(r));
    expect(batches[0]?.nodes.map((n) => n.name)).toEqual(['good']);
    expect(String(lines.find((l) => l.node === 'bad')?.err)).toMatch(
      /^failed parsing metrics: line 1:/,
    );
  });

  it('times out a silent kubelet within the per-node timeout', async () => {
    const silent = await startKubelet({ ...servingTls() });
    silent.handler = () => {}; // never answers
    const { s, batches, lines } = scraper({
      nodes: [node('slow', silent.port)],
      timeoutSeconds: 0.3,
    });
    const late = lateness();
    const t0 = Date.now();
    await s.tick();
    const elapsed = Date.now() - t0 - late.ms(); // this process's timers running late aside
    late.stop();
    await s.stop();
    silent.server.closeAllConnections();
    await new Promise((r) => silent.server.close(r));
    expect(elapsed).toBeLessThan(2000);
    expect(batches[0]?.nodes).toEqual([]);
    expect(lines.find((l) => l.node === 'slow')).toMatchObject({
      msg: 'Failed to scrape node, timeout to access kubelet',
    });
    expect(String(lines.find((l) => l.node === 'slow')?.err)).toContain(
      'context deadline exceeded',
    );
  });

  it('limits concurrent requests', async () => {
    kubelet.requests = 0;
    kubelet.maxInFlight = 0;
    kubelet.delayMs = 100;
    const nodes = ['a', 'b', 'c', 'd', 'e', 'f'].map((n) => node(n, kubelet.port));
    const { s, batches } = scraper({ nodes, concurrency: 2 });
    await s.tick();
    await s.stop();
    kubelet.delayMs = 0;
    expect(kubelet.maxInFlight).toBe(2);
    expect(batches[0]?.nodes).toHaveLength(6);
    // Six nodes serve the same pods: duplicates are dropped, as metrics-server does.
    expect(batches[0]?.pods).toHaveLength(2);
  });

  it('scrapes many nodes without listener-leak warnings', async () => {
    const warnings: Error[] = [];
    const onWarning = (w: Error) => warnings.push(w);
    process.on('warning', onWarning);
    kubelet.requests = 1;
    const nodes = Array.from({ length: 40 }, (_, i) => node(`n${i}`, kubelet.port));
    const { s, batches } = scraper({ nodes, concurrency: 4, stagger: true });
    await s.tick();
    await s.stop();
    await new Promise((r) => setTimeout(r, 20));
    process.off('warning', onWarning);
    expect(batches[0]?.nodes).toHaveLength(40);
    expect(warnings.map((w) => w.name)).not.toContain('MaxListenersExceededWarning');
  });

  it('authenticates with a client certificate', async () => {
    const mtls = await startKubelet({
      ...servingTls(),
      requestCert: true,
      rejectUnauthorized: true,
      ca: ca.certPem,
    });
    mtls.handler = (req, res) => {
      const cn = (req.socket as import('node:tls').TLSSocket).getPeerCertificate().subject?.CN;
      res.writeHead(cn === 'annex' ? 200 : 403).end(bodies[0]);
    };
    const { s, batches } = scraper({
      nodes: [node('mtls', mtls.port)],
      tls: { ca: ca.certPem, cert: client.certPem, key: client.keyPem },
      bearerToken: undefined,
    });
    await s.tick();
    await s.stop();
    await new Promise((r) => mtls.server.close(r));
    expect(batches[0]?.nodes.map((n) => n.name)).toEqual(['mtls']);
  });

  it('serves Running pods only, labelled, when a pod list is given', async () => {
    kubelet.requests = 1; // scrape B
    const { s, batches } = scraper({
      nodes: [node('worker-1', kubelet.port)],
      listPods: async () => [
        {
          metadata: { namespace: 'default', name: 'web-6f9c7d5b8d-k2x7p', labels: { app: 'web' } },
          status: { phase: 'Running' },
        },
        {
          metadata: { namespace: 'kube-system', name: 'coredns-76f75df574-9qz5m' },
          status: { phase: 'Succeeded' },
        },
      ],
    });
    await s.tick();
    await s.stop();
    expect(batches[0]?.pods.map((p) => [p.name, p.labels])).toEqual([
      ['web-6f9c7d5b8d-k2x7p', { app: 'web' }],
    ]);
  });

  it('stores nothing when the first node list fails', async () => {
    const { s, batches, lines } = scraper({
      nodes: [],
      listNodes: () => Promise.reject(new Error('boom')),
    });
    await s.tick();
    await s.stop();
    expect(batches).toEqual([]);
    expect(lines.find((l) => l.msg === 'Failed to list nodes')).toMatchObject({ err: 'boom' });
  });

  it('keeps scraping the nodes of the last list while listing fails (API server down)', async () => {
    let up = true;
    const { s, batches, lines } = scraper({
      nodes: [],
      listNodes: async () => {
        if (!up) throw new Error('API server gone');
        return [node('w', kubelet.port)];
      },
    });
    await s.tick();
    up = false;
    await s.tick();
    await s.stop();
    expect(batches.map((b) => b.nodes.map((n) => n.name))).toEqual([['w'], ['w']]);
    expect(lines.find((l) => l.msg === 'Failed to list nodes; using the last list')).toMatchObject({
      err: 'API server gone',
    });
  });

  it('start() ticks at once and then every interval until stop()', async () => {
    kubelet.requests = 0;
    const { s, batches } = scraper({
      nodes: [node('w', kubelet.port)],
      intervalSeconds: 0.2,
      timeoutSeconds: 0.1,
    });
    s.start();
    await new Promise((r) => setTimeout(r, 500));
    await s.stop();
    const n = batches.length;
    expect(n).toBeGreaterThanOrEqual(2);
    expect(n).toBeLessThanOrEqual(4);
    await new Promise((r) => setTimeout(r, 300));
    expect(batches.length).toBe(n);
    expect(s.lastTickStartedAt).toBeGreaterThan(0);
  });
});
