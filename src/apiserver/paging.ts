// limit/continue over a consistent snapshot, as kube-apiserver pages etcd: every page of
// one list is read at the first page's resourceVersion, and the continue token is
// base64url JSON {"v":"meta.k8s.io/v1","rv":N,"start":"<key>\u0000"}. Providers only
// hand out their current snapshot, so the framework keeps recent ones by resourceVersion
// (bounded in count and age, like etcd's compaction window); a token whose snapshot was
// dropped gets 410 Expired plus a token that resumes on current data, as upstream does.
import { badRequest, expired, expiredContinue } from '../core/status.js';
import type { KubeObject, Provider } from '../core/types.js';

/** A snapshot sorted by key (namespace/name), ready to page. */
export interface SortedSnapshot {
  resourceVersion: string;
  items: KubeObject[];
  keys: string[];
  /** When this snapshot was first seen (ms), for eviction. */
  seenAt: number;
}

export const objectKey = (o: KubeObject) =>
  o.metadata.namespace ? `${o.metadata.namespace}/${o.metadata.name}` : o.metadata.name;

const byteOrder = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

export function sortSnapshot(
  resourceVersion: string,
  items: KubeObject[],
  seenAt: number,
): SortedSnapshot {
  const keyed = items.map((o) => ({ k: objectKey(o), o }));
  keyed.sort((a, b) => byteOrder(a.k, b.k));
  return { resourceVersion, items: keyed.map((x) => x.o), keys: keyed.map((x) => x.k), seenAt };
}

export interface SnapshotStoreOptions {
  /** Snapshots kept per resource (default 10). */
  maxSnapshots?: number;
  /** Age after which a snapshot can no longer serve continue tokens (default 5 min, etcd's compaction period). */
  maxAgeMs?: number;
  now?: () => number;
}

/** Recent snapshots of one resource, by resourceVersion. */
export class SnapshotStore {
  private readonly byRv = new Map<string, SortedSnapshot>();
  private readonly max: number;
  private readonly maxAge: number;
  private readonly now: () => number;

  constructor(
    private readonly provider: Provider,
    opts: SnapshotStoreOptions = {},
  ) {
    this.max = opts.maxSnapshots ?? 10;
    this.maxAge = opts.maxAgeMs ?? 5 * 60_000;
    this.now = opts.now ?? Date.now;
  }

  /** The provider's current snapshot, sorted once per resourceVersion and remembered. */
  async current(): Promise<SortedSnapshot> {
    const snap = await this.provider.snapshot();
    const known = this.byRv.get(snap.resourceVersion);
    if (known) return known;
    const sorted = sortSnapshot(snap.resourceVersion, snap.items, this.now());
    this.byRv.set(snap.resourceVersion, sorted);
    this.evict();
    return sorted;
  }

  /** A kept snapshot, or undefined once evicted. */
  get(resourceVersion: string): SortedSnapshot | undefined {
    this.evict();
    return this.byRv.get(resourceVersion);
  }

  private evict(): void {
    const cutoff = this.now() - this.maxAge;
    for (const [rv, s] of this.byRv) {
      // Map iteration is insertion order: oldest first.
      if (this.byRv.size > this.max || s.seenAt < cutoff) this.byRv.delete(rv);
      else break;
    }
  }
}

export interface ContinueToken {
  /** -1: continue on the newest data (handed out with a 410). */
  rv: number;
  /** The key to start from (inclusive), without the leading "/". */
  start: string;
}

export function encodeContinue(rv: number, startKey: string): string {
  const json = JSON.stringify({ v: 'meta.k8s.io/v1', rv, start: `/${startKey}` });
  return Buffer.from(json).toString('base64url');
}

/** storage.DecodeContinue's checks and messages, as a 400 "invalid continue token: ...". */
export function decodeContinue(token: string): ContinueToken {
  const invalid = (why: string) =>
    badRequest(`invalid continue token: continue key is not valid${why}`);
  if (!/^[A-Za-z0-9_-]*={0,2}$/.test(token)) throw invalid(': illegal base64 data');
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    throw invalid(': invalid JSON');
  }
  const t = parsed as { v?: unknown; rv?: unknown; start?: unknown };
  if (t === null || typeof t !== 'object') throw invalid(': invalid JSON');
  if (t.v !== 'meta.k8s.io/v1') {
    throw invalid(`: server does not recognize this encoded version ${String(t.v ?? '')}`);
  }
  if (typeof t.rv !== 'number' || !Number.isInteger(t.rv) || t.rv === 0 || t.rv < -1) {
    throw invalid(': incorrect encoded start resourceVersion (version meta.k8s.io/v1)');
  }
  if (typeof t.start !== 'string' || t.start.length === 0) {
    throw invalid(': encoded start key empty (version meta.k8s.io/v1)');
  }
  if (!t.start.startsWith('/') || t.start.includes('/../') || t.start.startsWith('/..')) {
    throw invalid('');
  }
  return { rv: t.rv, start: t.start.slice(1) };
}

export interface ListRequest {
  limit: number;
  continueToken: string;
  resourceVersion: string;
  resourceVersionMatch: string;
}

/** limit/continue/resourceVersion/resourceVersionMatch from the query. */
export function listRequestOf(query: URLSearchParams): ListRequest {
  const rawLimit = query.get('limit') ?? '';
  let limit = 0;
  if (rawLimit !== '') {
    if (!/^[+-]?\d+$/.test(rawLimit)) {
      throw badRequest(`strconv.ParseInt: parsing ${JSON.stringify(rawLimit)}: invalid syntax`);
    }
    limit = Math.max(0, Number(rawLimit));
  }
  return {
    limit,
    continueToken: query.get('continue') ?? '',
    resourceVersion: query.get('resourceVersion') ?? '',
    resourceVersionMatch: query.get('resourceVersionMatch') ?? '',
  };
}

export interface Page {
  resourceVersion: string;
  items: KubeObject[];
  continue?: string;
  remainingItemCount?: number;
}

function numericRv(rv: string): number {
  const n = Number(rv);
  if (!Number.isSafeInteger(n) || n <= 0) {
    throw new Error(
      `resourceVersion ${JSON.stringify(rv)} is not a positive integer; paging needs one`,
    );
  }
  return n;
}

/** First index whose key is >= start (keys are sorted). */
function lowerBound(keys: string[], start: string): number {
  let lo = 0;
  let hi = keys.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (keys[mid]! < start) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Which snapshot a list request reads, enforcing continue/resourceVersion rules. */
export async function snapshotFor(
  store: SnapshotStore,
  req: ListRequest,
): Promise<{ snap: SortedSnapshot; start: string }> {
  if (req.continueToken) {
    if (req.resourceVersion !== '' && req.resourceVersion !== '0') {
      throw badRequest('specifying resource version is not allowed when using continue');
    }
    const tok = decodeContinue(req.continueToken);
    if (tok.rv === -1) return { snap: await store.current(), start: tok.start };
    const snap = store.get(String(tok.rv));
    if (!snap) throw expiredContinue(encodeContinue(-1, tok.start));
    return { snap, start: tok.start };
  }
  if (req.resourceVersionMatch === 'Exact' && req.resourceVersion !== '') {
    const current = await store.current();
    if (current.resourceVersion === req.resourceVersion) return { snap: current, start: '' };
    const snap = store.get(req.resourceVersion);
    if (!snap) throw expired('The resourceVersion for the provided list is too old.');
    return { snap, start: '' };
  }
  return { snap: await store.current(), start: '' };
}

/**
 * One page of `snap` from `start`, keeping objects `match` accepts, within the keys that
 * begin with `prefix` ("<namespace>/" for a namespaced list, as etcd ranges over a key
 * prefix). remainingItemCount is only given for unfiltered lists (as upstream: with
 * selectors the count is unknown).
 */
export function page(
  snap: SortedSnapshot,
  start: string,
  limit: number,
  match: (o: KubeObject) => boolean,
  filtered: boolean,
  prefix = '',
): Page {
  const lo = prefix ? lowerBound(snap.keys, prefix) : 0;
  // The first key past the prefix range: prefix with its last character incremented.
  const end = prefix
    ? lowerBound(
        snap.keys,
        prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1),
      )
    : snap.keys.length;
  const from = Math.max(lo, start ? lowerBound(snap.keys, start) : 0);
  const items: KubeObject[] = [];
  let i = from;
  for (; i < end; i++) {
    const o = snap.items[i]!;
    if (!match(o)) continue;
    if (limit > 0 && items.length === limit) break;
    items.push(o);
  }
  const out: Page = { resourceVersion: snap.resourceVersion, items };
  if (limit > 0 && i < end) {
    // i is the first matching item after the page: there is more to read.
    // Resume just after the last key returned ("\u0000" sorts right after it).
    const last = items[items.length - 1]!;
    out.continue = encodeContinue(numericRv(snap.resourceVersion), `${objectKey(last)}\u0000`);
    if (!filtered) out.remainingItemCount = end - i;
  }
  return out;
}
