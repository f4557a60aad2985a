// Aggregated-API traffic through the real kube-apiserver (its aggregator proxies to annex
// with the front-proxy certificate; annex authenticates that and asks the API server's
// SubjectAccessReview): a steady rate of PodMetrics lists and gets, and long-lived
// watches that must stay open and keep receiving events. Every answer is checked.
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { parse } from 'yaml';
import type { ClusterInfo } from '../cluster/control-plane.js';

const PODS = '/apis/metrics.annex.dev/v1beta1/pods';

interface Identity {
  ca: Buffer;
  cert: Buffer;
  key: Buffer;
}

export function adminIdentity(c: ClusterInfo): Identity {
  const user = parse(readFileSync(c.adminKubeconfig, 'utf8')).users[0].user;
  return {
    ca: readFileSync(c.servingCaFile),
    cert: Buffer.from(user['client-certificate-data'], 'base64'),
    key: Buffer.from(user['client-key-data'], 'base64'),
  };
}

function get(
  c: ClusterInfo,
  id: Identity,
  agent: Agent,
  path: string,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${c.server}${path}`,
      { ...id, agent, headers: { accept: 'application/json' }, timeout: 10_000 },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d) => (body += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error('no answer within 10 s')));
    req.on('error', reject);
    req.end();
  });
}

/** annex's own V8 heap in use (MB), from its /metrics, read with the admin client certificate. */
export function heapProbe(c: ClusterInfo, port: number, annexCa: string) {
  const id = { ...adminIdentity(c), ca: annexCa };
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  return () =>
    new Promise<number>((resolve, reject) => {
      const req = request(
        { host: '127.0.0.1', port, path: '/metrics', ...id, servername: 'localhost', agent },
        (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (d) => (body += d));
          res.on('end', () => {
            const m = /^annex_nodejs_heap_size_used_bytes (\S+)$/m.exec(body);
            if (m) resolve(Number(m[1]) / 2 ** 20);
            else reject(new Error(`no heap figure (${res.statusCode})`));
          });
        },
      );
      req.setTimeout(5000, () => req.destroy(new Error('timeout')));
      req.on('error', reject);
      req.end();
    });
}

export interface SteadyFigures {
  sent: number;
  ok: number;
  errors: number;
  errorKinds: Record<string, number>;
  p50: number;
  p99: number;
}

/** Alternating list and get of PodMetrics at `rate` per second until stop(). */
export function steadyAggregated(c: ClusterInfo, rate: number) {
  const id = adminIdentity(c);
  const agent = new Agent({ keepAlive: true, maxSockets: 4 });
  const figures = { sent: 0, ok: 0, errors: 0, errorKinds: {} as Record<string, number> };
  const latencies: number[] = [];
  const fail = (text: string) => {
    figures.errors++;
    const k = text.replace(/\d+/g, 'N').slice(0, 120);
    figures.errorKinds[k] = (figures.errorKinds[k] ?? 0) + 1;
  };
  let podPath: string | undefined;
  const one = async (i: number) => {
    const list = i % 2 === 0 || !podPath;
    const t0 = performance.now();
    figures.sent++;
    try {
      const r = await get(c, id, agent, list ? PODS : podPath!);
      if (r.status !== 200) return fail(`status ${r.status}: ${r.body.slice(0, 120)}`);
      const o = JSON.parse(r.body);
      if (list) {
        if (o.kind !== 'PodMetricsList' || !(o.items?.length > 0))
          return fail(`list: ${o.kind} with ${o.items?.length} items`);
        const p = o.items[0].metadata;
        podPath = `/apis/metrics.annex.dev/v1beta1/namespaces/${p.namespace}/pods/${p.name}`;
      } else if (o.kind !== 'PodMetrics' || !podPath!.endsWith(`/${o.metadata?.name}`)) {
        return fail(`get: ${o.kind} ${o.metadata?.name}`);
      }
      figures.ok++;
      latencies.push(performance.now() - t0);
    } catch (e) {
      fail((e as Error).message);
    }
  };
  const pending = new Set<Promise<void>>();
  let i = 0;
  const timer = setInterval(() => {
    const p = one(i++).finally(() => pending.delete(p));
    pending.add(p);
  }, 1000 / rate);
  return {
    async stop(): Promise<SteadyFigures> {
      clearInterval(timer);
      await Promise.all(pending);
      agent.destroy();
      const sorted = latencies.sort((a, b) => a - b);
      const pct = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
      return { ...figures, p50: pct(0.5) ?? 0, p99: pct(0.99) ?? 0 };
    },
  };
}

export interface WatchState {
  status: number;
  events: number;
  errors: number;
  lastEventMs: number;
  ended: string | null;
}

/** `n` watches of all PodMetrics through the API server, each on its own connection. */
export function openWatches(c: ClusterInfo, n: number) {
  const id = adminIdentity(c);
  const states: WatchState[] = [];
  const reqs: ReturnType<typeof request>[] = [];
  let closing = false;
  for (let w = 0; w < n; w++) {
    const s: WatchState = { status: 0, events: 0, errors: 0, lastEventMs: 0, ended: null };
    states.push(s);
    const req = request(
      `${c.server}${PODS}?watch=true&timeoutSeconds=3600`,
      { ...id, agent: false, headers: { accept: 'application/json' } },
      (res) => {
        s.status = res.statusCode ?? 0;
        let rest = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => {
          const lines = (rest + d).split('\n');
          rest = lines.pop()!;
          for (const line of lines) {
            if (!line) continue;
            try {
              const ev = JSON.parse(line);
              if (ev.type === 'ERROR') s.errors++;
              else s.events++;
            } catch {
              s.errors++;
            }
            s.lastEventMs = Date.now();
          }
        });
        res.on('end', () => (s.ended ??= closing ? null : 'ended'));
        res.on('aborted', () => (s.ended ??= closing ? null : 'aborted'));
      },
    );
    req.on('error', (e) => {
      if (!closing) s.ended ??= `error ${e.message}`;
    });
    req.end();
    reqs.push(req);
  }
  return {
    states,
    close() {
      closing = true;
      for (const r of reqs) r.destroy();
    },
  };
}
