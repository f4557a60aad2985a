// The aggregated API as one Koa middleware: discovery (/apis...), OpenAPI (/openapi/...)
// and get/list/watch for every declared resource, all derived from the declarations.
// It reads ctx.state.requestInfo (requestInfoMiddleware), which authentication and
// authorization middleware placed before it share. Paths it does not own go to next();
// inside /apis and /openapi every answer, failures included, is its own (never a redirect).
import type Koa from 'koa';
import {
  aggregatedDiscovery,
  apiGroup,
  apiGroupList,
  apiResourceList,
  render,
  validateGroups,
  type Rendered,
} from './discovery.js';
import { contentTypeOf, DISCOVERY_CONVERSIONS, negotiate } from './negotiate.js';
import { openapiV2, openapiV3, openapiV3Index } from './openapi.js';
import { SnapshotStore, type SnapshotStoreOptions } from './paging.js';
import { requestInfoOf } from './request-info.js';
import { ObjectEncoder } from './encoded.js';
import {
  serveRead,
  sendJson,
  serveResource,
  stamp,
  type ServedResource,
} from './resource-handler.js';
import { methodNotAllowedPath, notFoundPath } from '../core/status.js';
import type { GroupVersionDecl, ResourceDecl } from '../core/types.js';

export { requestInfoMiddleware } from './request-info.js';

export interface AggregatedApiOptions {
  /** How many snapshots, for how long, each resource keeps for continue tokens. */
  snapshots?: SnapshotStoreOptions;
  /** BOOKMARK period for watches with allowWatchBookmarks=true (default 60 s, as the watch cache). */
  bookmarkIntervalMs?: number;
  /** Watches without timeoutSeconds last 1–2× this (default 1800 s, kube-apiserver's --min-request-timeout). */
  minRequestTimeoutSeconds?: number;
  /** A watcher with this much unsent output is cut off (default 16 MiB). */
  maxWatchBufferBytes?: number;
  /** Clock for Table ages (tests). */
  now?: () => Date;
  /** Aborted on server shutdown: open watches end cleanly instead of being reset. */
  stop?: AbortSignal;
}

interface Docs {
  groupList: Rendered;
  discovery: Map<string, Rendered>;
  groups: Map<string, Rendered>;
  resourceLists: Map<string, Rendered>;
  openapiV2: Rendered;
  openapiV3: Map<string, Rendered>;
  openapiV3Index: Rendered;
}

function buildDocs(groups: readonly GroupVersionDecl[]): Docs {
  const docs: Docs = {
    groupList: render(apiGroupList(groups)),
    discovery: new Map(
      DISCOVERY_CONVERSIONS.map((c) => [c.version, render(aggregatedDiscovery(groups, c.version))]),
    ),
    groups: new Map(groups.map((g) => [g.group, render(apiGroup(g))])),
    resourceLists: new Map(),
    openapiV2: render(openapiV2(groups)),
    openapiV3: new Map(),
    openapiV3Index: render({}),
  };
  const index: { group: string; version: string; hash: string }[] = [];
  for (const g of groups) {
    for (const v of g.versions) {
      docs.resourceLists.set(`${g.group}/${v}`, render(apiResourceList(g, v)));
      const doc = render(openapiV3(g, v));
      docs.openapiV3.set(`${g.group}/${v}`, doc);
      index.push({ group: g.group, version: v, hash: doc.hash });
    }
  }
  docs.openapiV3Index = render(openapiV3Index(index));
  return docs;
}

/** A cacheable document: ETag, 304 on If-None-Match, and the caching headers given. */
function sendDoc(
  ctx: Koa.Context,
  doc: Rendered,
  contentType: string,
  headers: Record<string, string> = {},
) {
  ctx.set('ETag', doc.etag);
  for (const [k, v] of Object.entries(headers)) ctx.set(k, v);
  const inm = ctx.get('If-None-Match');
  if (inm && inm.split(',').some((t) => t.trim() === doc.etag)) {
    ctx.status = 304;
    ctx.body = null;
    return;
  }
  sendJson(ctx, doc.body, contentType);
}

export function aggregatedApi(
  groups: GroupVersionDecl[],
  opts: AggregatedApiOptions = {},
): Koa.Middleware {
  validateGroups(groups);
  const docs = buildDocs(groups);
  const stores = new Map<ResourceDecl, SnapshotStore>();
  const served = new Map<string, ServedResource>();
  const readers = new Map<string, GroupVersionDecl>();
  for (const g of groups) if (g.read) for (const v of g.versions) readers.set(`${g.group}/${v}`, g);
  for (const g of groups) {
    for (const r of g.resources) {
      const store = stores.get(r) ?? new SnapshotStore(r.provider, opts.snapshots);
      stores.set(r, store);
      for (const v of g.versions) {
        const at = { group: g.group, version: v, decl: r };
        const json = new ObjectEncoder((o) => stamp(o, at), r.creationTimestampIsNow === true);
        served.set(`${g.group}/${v}/${r.plural}`, { ...at, store, json });
      }
    }
  }
  const handlerOpts = {
    bookmarkIntervalMs: opts.bookmarkIntervalMs ?? 60_000,
    minRequestTimeoutSeconds: opts.minRequestTimeoutSeconds ?? 1800,
    maxWatchBufferBytes: opts.maxWatchBufferBytes ?? 16 * 1024 * 1024,
    now: opts.now ?? (() => new Date()),
    stop: opts.stop,
  };

  const discovery = (ctx: Koa.Context, segs: string[]) => {
    if (segs.length === 1) {
      const conv = negotiate(ctx.get('Accept'), DISCOVERY_CONVERSIONS);
      ctx.set('Vary', 'Accept');
      if (conv) {
        sendDoc(ctx, docs.discovery.get(conv.version)!, contentTypeOf(conv), {
          'Cache-Control': 'public',
        });
      } else {
        sendJson(ctx, docs.groupList.body, contentTypeOf(undefined));
      }
      return;
    }
    negotiate(ctx.get('Accept'));
    if (segs.length > 3) throw notFoundPath();
    const doc =
      segs.length === 2
        ? docs.groups.get(segs[1]!)
        : docs.resourceLists.get(`${segs[1]}/${segs[2]}`);
    if (!doc) throw notFoundPath();
    sendJson(ctx, doc.body, contentTypeOf(undefined));
  };

  const openapi = (ctx: Koa.Context, segs: string[]) => {
    negotiate(ctx.get('Accept'));
    const json = contentTypeOf(undefined);
    const rest = segs.slice(1).join('/');
    if (rest === 'v2') return sendDoc(ctx, docs.openapiV2, json);
    if (rest === 'v3')
      return sendDoc(ctx, docs.openapiV3Index, json, { 'Cache-Control': 'no-cache, private' });
    const doc =
      segs[1] === 'v3' && segs[2] === 'apis' && segs.length === 5
        ? docs.openapiV3.get(`${segs[3]}/${segs[4]}`)
        : undefined;
    if (!doc) throw notFoundPath();
    // A URL carrying the current hash never changes: let clients (kubectl's cache) keep it.
    const immutable = ctx.query.hash === doc.hash;
    const headers: Record<string, string> = immutable
      ? {
          'Cache-Control': 'public, immutable',
          Expires: new Date(Date.now() + 365 * 86_400_000).toUTCString(),
        }
      : { 'Cache-Control': 'no-cache, private' };
    sendDoc(ctx, doc, json, headers);
  };

  return async (ctx, next) => {
    const info = requestInfoOf(ctx);
    const segs = info.path.split('/').filter((s) => s !== '');
    const root = segs[0];
    if (root !== 'apis' && root !== 'openapi') return next();
    if (info.isResourceRequest) {
      const reader = readers.get(`${info.apiGroup}/${info.apiVersion}`);
      if (reader) return serveRead(ctx, info, reader);
      const r = served.get(`${info.apiGroup}/${info.apiVersion}/${info.resource}`);
      if (!r) throw notFoundPath();
      return serveResource(ctx, info, r, handlerOpts);
    }
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') throw methodNotAllowedPath();
    if (root === 'apis') return discovery(ctx, segs);
    return openapi(ctx, segs);
  };
}
