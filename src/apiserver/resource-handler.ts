// get, list and watch for one declared resource, the generic endpoint code every
// declaration shares (as k8s.io/apiserver's handlers serve every registry the same way).
import type Koa from 'koa';
import { servedVerbs } from './discovery.js';
import { kubeTimeOf, withCreationTimestamp, type ObjectEncoder } from './encoded.js';
import { contentTypeOf, negotiate, TABLE_CONVERSIONS } from './negotiate.js';
import { listRequestOf, page, snapshotFor, type SnapshotStore } from './paging.js';
import { checkPathSegments, type RequestInfo } from './request-info.js';
import { fieldMatcher, parseFieldSelector } from './selectors/field.js';
import { parseLabelSelector } from './selectors/label.js';
import { methodNotAllowed, methodNotAllowedPath, notFound, notFoundPath } from '../core/status.js';
import { includeObjectOf, toTable } from './table.js';
import type { GroupVersionDecl, KubeObject, ResourceDecl } from '../core/types.js';
import { startWatch, WATCH_CONTENT_TYPE, watchParamsOf } from './watch.js';

export interface ServedResource {
  group: string;
  version: string;
  decl: ResourceDecl;
  store: SnapshotStore;
  /** Each object's JSON as served here, made once per object (see encoded.ts). */
  json: ObjectEncoder;
}

export interface ResourceHandlerOptions {
  bookmarkIntervalMs: number;
  minRequestTimeoutSeconds: number;
  maxWatchBufferBytes: number;
  now: () => Date;
  /** Aborted on server shutdown: open watches end cleanly. */
  stop?: AbortSignal;
}

const WRITE_VERBS = new Set(['create', 'update', 'patch', 'delete', 'deletecollection']);

export function sendJson(ctx: Koa.Context, body: unknown, contentType: string): void {
  ctx.status = 200;
  // Set before the body so Koa keeps our exact media type (no added charset).
  ctx.set('Content-Type', contentType);
  ctx.body = typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body);
}

/** An object as served under this group/version (one provider may back several). */
export function stamp(
  o: KubeObject,
  r: Pick<ServedResource, 'group' | 'version' | 'decl'>,
): KubeObject {
  const apiVersion = `${r.group}/${r.version}`;
  // Already so (the usual case): the same JSON without a copy.
  if (o.apiVersion === apiVersion && o.kind === r.decl.kind) return o;
  return { ...o, apiVersion, kind: r.decl.kind };
}

/** The object with the response time as creationTimestamp, where the declaration says so. */
function timed(o: KubeObject, r: ServedResource, now: Date): KubeObject {
  return r.decl.creationTimestampIsNow ? withCreationTimestamp(o, kubeTimeOf(now)) : o;
}

/** Objects in the namespace (if any) matching both selectors; `filtered` if any selector is set. */
function selection(info: RequestInfo, decl: ResourceDecl) {
  const labels = parseLabelSelector(info.query.get('labelSelector') ?? '');
  const fields = parseFieldSelector(info.query.get('fieldSelector') ?? '');
  const byField = fieldMatcher(fields, decl.selectableFields);
  const ns = info.namespace;
  const match = (o: KubeObject) =>
    (!ns || o.metadata.namespace === ns) && labels.matches(o.metadata.labels) && byField(o);
  return { match, filtered: !labels.empty || !fields.empty };
}

/** The Table form the Accept header asks for, if any: its conversion and options (read per call: ages use now). */
function tableFormOf(
  ctx: Koa.Context,
  info: RequestInfo,
  r: ServedResource,
  opts: ResourceHandlerOptions,
) {
  const conv = negotiate(ctx.get('Accept'), TABLE_CONVERSIONS);
  if (!conv) return undefined;
  const includeObject = includeObjectOf(info.query);
  const apiVersion = `${r.group}/${r.version}`;
  return {
    conv,
    options: () => {
      const now = opts.now();
      const time = r.decl.creationTimestampIsNow ? { creationTimestamp: kubeTimeOf(now) } : {};
      return { version: conv.version, includeObject, apiVersion, now, ...time };
    },
  };
}

async function get(
  ctx: Koa.Context,
  info: RequestInfo,
  r: ServedResource,
  opts: ResourceHandlerOptions,
) {
  const table = tableFormOf(ctx, info, r, opts);
  const snap = await r.store.current();
  const key = info.namespace ? `${info.namespace}/${info.name}` : info.name;
  const i = binarySearch(snap.keys, key);
  if (i < 0) throw notFound(r.decl.plural, r.group, info.name);
  const o = snap.items[i]!;
  if (table) {
    const meta = { resourceVersion: snap.resourceVersion };
    sendJson(ctx, toTable(r.decl, [o], meta, table.options()), contentTypeOf(table.conv));
  } else {
    sendJson(ctx, r.json.one(o, opts.now()), contentTypeOf(undefined));
  }
}

function binarySearch(keys: string[], key: string): number {
  let lo = 0;
  let hi = keys.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const k = keys[mid]!;
    if (k === key) return mid;
    if (k < key) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

async function list(
  ctx: Koa.Context,
  info: RequestInfo,
  r: ServedResource,
  opts: ResourceHandlerOptions,
) {
  const table = tableFormOf(ctx, info, r, opts);
  const { match, filtered } = selection(info, r.decl);
  const req = listRequestOf(info.query);
  const { snap, start } = await snapshotFor(r.store, req);
  const prefix = info.namespace ? `${info.namespace}/` : '';
  const p = page(snap, start, req.limit, match, filtered, prefix);
  const meta = {
    resourceVersion: p.resourceVersion,
    ...(p.continue ? { continue: p.continue } : {}),
    ...(p.remainingItemCount !== undefined ? { remainingItemCount: p.remainingItemCount } : {}),
  };
  if (table) {
    sendJson(ctx, toTable(r.decl, p.items, meta, table.options()), contentTypeOf(table.conv));
    return;
  }
  const head = JSON.stringify({
    kind: `${r.decl.kind}List`,
    apiVersion: `${r.group}/${r.version}`,
    metadata: meta,
  });
  // `items` is always an array, never null, even when empty.
  const body = r.json.list(`${head.slice(0, -1)},"items":[`, p.items, ']}', opts.now());
  sendJson(ctx, body, contentTypeOf(undefined));
}

async function watch(
  ctx: Koa.Context,
  info: RequestInfo,
  r: ServedResource,
  opts: ResourceHandlerOptions,
) {
  const table = tableFormOf(ctx, info, r, opts);
  const params = watchParamsOf(info.query);
  const sel = selection(info, r.decl);
  // The legacy /watch/<plural>/<name> form watches one object.
  const pathName = info.parts.length >= 2 ? info.name : '';
  const match = pathName
    ? (o: KubeObject) => o.metadata.name === pathName && sel.match(o)
    : sel.match;
  const apiVersion = `${r.group}/${r.version}`;
  const w = await startWatch({
    store: r.store,
    provider: r.decl.provider,
    params,
    match,
    filtered: sel.filtered || pathName !== '',
    encode: (o, first) =>
      table
        ? toTable(r.decl, [o], {}, { ...table.options(), noHeaders: !first })
        : stamp(timed(o, r, opts.now()), r),
    bookmark: (resourceVersion, annotations) =>
      table
        ? {
            kind: 'Table',
            apiVersion: `meta.k8s.io/${table.conv.version}`,
            metadata: { resourceVersion },
            rows: [],
          }
        : {
            kind: r.decl.kind,
            apiVersion,
            metadata: {
              resourceVersion,
              creationTimestamp: null,
              ...(annotations ? { annotations } : {}),
            },
          },
    bookmarkIntervalMs: opts.bookmarkIntervalMs,
    minRequestTimeoutSeconds: opts.minRequestTimeoutSeconds,
    maxBufferedBytes: opts.maxWatchBufferBytes,
    stop: opts.stop,
  });
  ctx.req.once('close', w.close);
  ctx.res.once('close', w.close);
  ctx.status = 200;
  ctx.set('Content-Type', WATCH_CONTENT_TYPE);
  ctx.set('Cache-Control', 'no-cache, private');
  ctx.body = w.stream;
  // Send the headers now: a client (client-go's Watch) waits for them before reading
  // events, and a quiet resource may not produce one for minutes.
  setImmediate(() => {
    if (!ctx.res.headersSent && !ctx.res.writableEnded) ctx.res.flushHeaders();
  });
}

/** Serves one resource request already matched to `r`. */
export async function serveResource(
  ctx: Koa.Context,
  info: RequestInfo,
  r: ServedResource,
  opts: ResourceHandlerOptions,
): Promise<void> {
  if (WRITE_VERBS.has(info.verb) || (info.verb === '' && ctx.method !== 'GET')) {
    throw methodNotAllowedPath();
  }
  checkPathSegments(info);
  if (info.subresource) throw notFoundPath();
  if (!r.decl.namespaced && info.namespace) throw notFoundPath();
  if (r.decl.namespaced && info.verb === 'get' && !info.namespace) throw notFoundPath();
  const verbs: string[] = servedVerbs(r.decl);
  if (!verbs.includes(info.verb)) throw methodNotAllowed(info.verb, r.decl.plural, r.group);
  if (info.verb === 'get') return get(ctx, info, r, opts);
  if (info.verb === 'list') return list(ctx, info, r, opts);
  return watch(ctx, info, r, opts);
}

/** A resource request of a group that answers it itself (GroupVersionDecl.read). */
export async function serveRead(
  ctx: Koa.Context,
  info: RequestInfo,
  g: GroupVersionDecl,
): Promise<void> {
  if (WRITE_VERBS.has(info.verb) || (info.verb === '' && ctx.method !== 'GET')) {
    throw methodNotAllowedPath();
  }
  if (info.verb !== 'get' && info.verb !== 'list') {
    throw methodNotAllowed(info.verb, info.resource, g.group);
  }
  checkPathSegments(info);
  negotiate(ctx.get('Accept'));
  const body = await g.read!({
    verb: info.verb,
    group: info.apiGroup,
    version: info.apiVersion,
    namespace: info.namespace,
    resource: info.resource,
    name: info.name,
    subresource: info.subresource,
    parts: info.parts,
    query: info.query,
  });
  sendJson(ctx, body, contentTypeOf(undefined));
}
