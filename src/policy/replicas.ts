// Every replica's decisions in one list, whichever replica the API server asks: the
// replica that serves `kubectl get admissionevents` reads its peers' logs (GET
// /peers/policy/decisions over TLS, each side proving itself with annex's shared CA),
// merges them with its own and de-duplicates by name (names carry a per-process tag, so
// a replica listed as its own peer, or found twice, counts once). A peer that is down or
// slow is left out and logged: its decisions are missing, the list never fails.
//
// Why fan-out and not reading back the Events: Events are correlated and rate-limited by
// design (one Event with a count for a thousand refusals), so they cannot give one row per
// decision with its user and time; and writing every decision to etcd is the write storm
// the Events recorder exists to prevent. Decisions stay in each replica's memory, bounded.
import { request, Agent } from 'node:https';
import { checkServerIdentity } from 'node:tls';
import { ObjectStore } from '../apiserver/object-store.js';
import type { KubeObject, Provider, Snapshot, WatchEvent } from '../core/types.js';
import type { KubeClient } from '../kube/client.js';
import type { Logger } from '../log.js';

export const PEER_DECISIONS_PATH = '/peers/policy/decisions';

export interface PeerTls {
  ca: string;
  cert: string;
  key: string;
}

export interface ReplicaViewOptions {
  /** This replica's own decisions. */
  local: ObjectStore;
  /** The other replicas' base URLs (may include this one). */
  peers: () => Promise<string[]> | string[];
  /** annex's CA and serving certificate, read when a peer is asked (they rotate). */
  tls: () => PeerTls;
  /** The name every replica's certificate carries: <service>.<namespace>.svc. */
  serverName: string;
  timeoutMs: number;
  log: Logger;
  /** While a watch is open, peers are asked this often (default 1 s). */
  pollMs?: number;
}

function isEvent(o: unknown): o is KubeObject {
  const m = (o as KubeObject | null)?.metadata;
  return (
    typeof m?.name === 'string' && (m.namespace === undefined || typeof m.namespace === 'string')
  );
}

/** One peer's decisions, or an Error saying why not. */
export function fetchPeer(
  base: string,
  opts: Pick<ReplicaViewOptions, 'tls' | 'serverName' | 'timeoutMs'>,
  agent?: Agent,
): Promise<KubeObject[]> {
  const { ca, cert, key } = opts.tls();
  return new Promise((resolve, reject) => {
    const req = request(
      new URL(PEER_DECISIONS_PATH, base),
      {
        ca,
        cert,
        key,
        ...(agent ? { agent } : {}),
        servername: opts.serverName,
        // The certificate names the Service, not the Pod address dialled.
        checkServerIdentity: (_host, c) => checkServerIdentity(opts.serverName, c),
        timeout: opts.timeoutMs,
        headers: { accept: 'application/json' },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('error', reject);
        res.on('end', () => {
          if (res.statusCode !== 200) return reject(new Error(`answered ${res.statusCode}`));
          try {
            const parsed = JSON.parse(body) as { items?: unknown };
            resolve(Array.isArray(parsed.items) ? parsed.items.filter(isEvent) : []);
          } catch {
            reject(new Error('answered with a body that is not JSON'));
          }
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer within ${opts.timeoutMs} ms`)));
    req.on('error', reject);
    req.end();
  });
}

/** The merged view as a Provider: list asks every peer; a watch polls them while open. */
export class ReplicaView implements Provider {
  private readonly merged = new ObjectStore();
  private readonly agent = new Agent({ keepAlive: true, maxSockets: 4 });
  private refreshing: Promise<void> | undefined;
  private watchers = 0;
  private poll: NodeJS.Timeout | undefined;
  private readonly stopLocal: () => void;
  /** Peers that failed last time: logged once per outage, not on every list. */
  private readonly down = new Set<string>();

  constructor(private readonly opts: ReplicaViewOptions) {
    // This replica's decisions reach local watchers at once.
    this.stopLocal = opts.local.subscribe('0', (e) => this.applyLocal(e));
  }

  private applyLocal(e: WatchEvent): void {
    if (e.type === 'DELETED')
      this.merged.delete(e.object.metadata.namespace, e.object.metadata.name);
    else if (e.type === 'ADDED' || e.type === 'MODIFIED') this.merged.set(e.object);
  }

  async snapshot(): Promise<Snapshot> {
    await this.refresh();
    return this.merged.snapshot();
  }

  subscribe(
    resourceVersion: string,
    onEvent: (event: WatchEvent, resourceVersion: string) => void,
  ): () => void {
    const unsubscribe = this.merged.subscribe(resourceVersion, onEvent);
    if (this.watchers++ === 0) {
      this.poll = setInterval(() => void this.refresh(), this.opts.pollMs ?? 1000);
      this.poll.unref?.();
    }
    let done = false;
    return () => {
      if (done) return;
      done = true;
      unsubscribe();
      if (--this.watchers === 0) clearInterval(this.poll);
    };
  }

  stop(): void {
    clearInterval(this.poll);
    this.stopLocal();
    this.agent.destroy();
  }

  /** One refresh at a time; callers arriving meanwhile share it. */
  private refresh(): Promise<void> {
    this.refreshing ??= this.doRefresh().finally(() => (this.refreshing = undefined));
    return this.refreshing;
  }

  private async doRefresh(): Promise<void> {
    let peers: string[] = [];
    try {
      peers = [...new Set(await this.opts.peers())];
    } catch (e) {
      this.opts.log.warn({ error: (e as Error).message }, 'cannot find the other replicas');
    }
    const fetched = await Promise.all(
      peers.map(async (url) => {
        try {
          const items = await fetchPeer(url, this.opts, this.agent);
          if (this.down.delete(url)) this.opts.log.info({ peer: url }, 'replica answers again');
          return items;
        } catch (e) {
          if (!this.down.has(url)) {
            this.down.add(url);
            this.opts.log.warn(
              { peer: url, error: (e as Error).message },
              'replica did not answer: its decisions are left out of lists until it does',
            );
          }
          return [];
        }
      }),
    );
    const byKey = new Map<string, KubeObject>();
    for (const o of [...this.opts.local.snapshot().items, ...fetched.flat()]) {
      byKey.set(`${o.metadata.namespace ?? ''}/${o.metadata.name}`, o);
    }
    this.merged.replace([...byKey.values()]);
  }
}

/** The other replicas, from the Service's EndpointSlices (ready endpoints), cached briefly. */
export function endpointSlicePeers(
  kube: KubeClient,
  service: { name: string; namespace: string; port: number },
  cacheMs = 5000,
): () => Promise<string[]> {
  let cached: { at: number; urls: string[] } | undefined;
  interface Slice {
    addressType?: string;
    ports?: { port?: number }[];
    endpoints?: { addresses?: string[]; conditions?: { ready?: boolean } }[];
  }
  return async () => {
    if (cached && Date.now() - cached.at < cacheMs) return cached.urls;
    const list = await kube.list<Slice>(
      `/apis/discovery.k8s.io/v1/namespaces/${service.namespace}/endpointslices`,
      { labelSelector: `kubernetes.io/service-name=${service.name}` },
    );
    const urls = list.items.flatMap((s) => {
      const port = s.ports?.[0]?.port ?? service.port;
      return (s.endpoints ?? [])
        .filter((e) => e.conditions?.ready !== false)
        .flatMap((e) => e.addresses ?? [])
        .map((a) => (s.addressType === 'IPv6' ? `https://[${a}]:${port}` : `https://${a}:${port}`));
    });
    cached = { at: Date.now(), urls };
    return urls;
  };
}
