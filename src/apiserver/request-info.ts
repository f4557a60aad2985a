// The request, parsed once into the attributes authorization, logging and handlers share,
// the way k8s.io/apiserver's RequestInfoFactory does (endpoints/request/requestinfo.go).
// The rules below follow that factory so a SubjectAccessReview built from a RequestInfo
// asks the same question kube-apiserver would.
import type Koa from 'koa';
import { parseFieldSelector } from './selectors/field.js';
import { badRequest } from '../core/status.js';

export interface RequestInfo {
  /** True for /apis/<group>/<version>/... (and /api/<version>/...); false for discovery, /openapi, probes. */
  isResourceRequest: boolean;
  /** The decoded URL path, without the query string. */
  path: string;
  /** Resource verbs (get, list, watch, create, ...) or, for non-resource requests, the lower-case method. */
  verb: string;
  apiPrefix: string;
  apiGroup: string;
  apiVersion: string;
  namespace: string;
  resource: string;
  subresource: string;
  name: string;
  /** Path segments from the resource on: resource/name/subresource/... */
  parts: string[];
  /** Raw selectors, set for list/watch/deletecollection (SAR carries them since k8s 1.31). */
  labelSelector: string;
  fieldSelector: string;
  /** The query, decoded once (`+` is a space: the aggregator re-encodes queries Go-style). */
  query: URLSearchParams;
}

const API_PREFIXES = new Set(['api', 'apis']);
const GROUPLESS_PREFIXES = new Set(['api']);
const SPECIAL_VERBS = new Set(['proxy', 'watch']);
const SPECIAL_VERBS_NO_SUBRESOURCES = new Set(['proxy']);
const NAMESPACE_SUBRESOURCES = new Set(['status', 'finalize']);
const SELECTOR_VERBS = new Set(['list', 'watch', 'deletecollection']);

const METHOD_VERBS: Record<string, string> = {
  POST: 'create',
  GET: 'get',
  HEAD: 'get',
  PUT: 'update',
  PATCH: 'patch',
  DELETE: 'delete',
};

function decodePath(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

/** Go's ParseBool-like rule apiserver uses for `watch`: anything but "0"/"false" is true. */
export function queryFlag(query: URLSearchParams, key: string): boolean {
  const v = query.get(key);
  if (v === null) return false;
  return v !== '0' && v.toLowerCase() !== 'false';
}

export function parseRequestInfo(method: string, rawPath: string, rawQuery = ''): RequestInfo {
  const path = decodePath(rawPath);
  const query = new URLSearchParams(rawQuery);
  const info: RequestInfo = {
    isResourceRequest: false,
    path,
    verb: method.toLowerCase(),
    apiPrefix: '',
    apiGroup: '',
    apiVersion: '',
    namespace: '',
    resource: '',
    subresource: '',
    name: '',
    parts: [],
    labelSelector: '',
    fieldSelector: '',
    query,
  };
  const trimmed = path.replace(/^\/+|\/+$/g, '');
  let parts = trimmed === '' ? [] : trimmed.split('/');
  if (parts.length < 3 || !API_PREFIXES.has(parts[0]!)) return info;
  const apiPrefix = parts[0]!;
  parts = parts.slice(1);
  let apiGroup = '';
  if (!GROUPLESS_PREFIXES.has(apiPrefix)) {
    // /apis/<g>/<v> alone is discovery, not a resource.
    if (parts.length < 3) return info;
    apiGroup = parts[0]!;
    parts = parts.slice(1);
  }
  info.apiPrefix = apiPrefix;
  info.apiGroup = apiGroup;
  info.isResourceRequest = true;
  info.apiVersion = parts[0]!;
  parts = parts.slice(1);

  if (SPECIAL_VERBS.has(parts[0]!)) {
    // /watch/<resource>/... and /proxy/...: legacy forms; apiserver errors when nothing follows.
    if (parts.length < 2) return { ...info, isResourceRequest: false, verb: method.toLowerCase() };
    info.verb = parts[0]!;
    parts = parts.slice(1);
  } else {
    info.verb = METHOD_VERBS[method.toUpperCase()] ?? '';
  }

  if (parts[0] === 'namespaces') {
    if (parts.length > 1) {
      info.namespace = parts[1]!;
      // /namespaces/<ns>/<resource>...: the resource is what follows, unless it is a
      // subresource of the namespace object itself.
      if (parts.length > 2 && !NAMESPACE_SUBRESOURCES.has(parts[2]!)) parts = parts.slice(2);
    }
  }
  info.parts = parts;
  if (parts.length >= 3 && !SPECIAL_VERBS_NO_SUBRESOURCES.has(info.verb)) {
    info.subresource = parts[2]!;
  }
  if (parts.length >= 2) info.name = parts[1]!;
  if (parts.length >= 1) info.resource = parts[0]!;

  if (info.name === '' && info.verb === 'get') {
    info.verb = queryFlag(query, 'watch') ? 'watch' : 'list';
  }
  if (info.name === '' && info.verb === 'delete') info.verb = 'deletecollection';
  if (SELECTOR_VERBS.has(info.verb)) {
    info.labelSelector = query.get('labelSelector') ?? '';
    info.fieldSelector = query.get('fieldSelector') ?? '';
  }
  if (info.name === '' && (info.verb === 'list' || info.verb === 'watch')) {
    // A list narrowed to one name by fieldSelector is authorized as that name.
    const name = exactName(info.fieldSelector);
    if (name !== undefined && isValidPathSegmentName(name)) info.name = name;
  }
  return info;
}

function exactName(fieldSelector: string): string | undefined {
  if (!fieldSelector) return undefined;
  try {
    return parseFieldSelector(fieldSelector).requiresExactMatch('metadata.name');
  } catch {
    return undefined;
  }
}

/** apimachinery path.IsValidPathSegmentName: not "." / "..", no "/" or "%". */
function isValidPathSegmentName(name: string): boolean {
  return pathSegmentProblems(name).length === 0;
}

function pathSegmentProblems(name: string): string[] {
  if (name === '.' || name === '..') return [`may not be '${name}'`];
  const out: string[] = [];
  for (const c of ['/', '%']) if (name.includes(c)) out.push(`may not contain '${c}'`);
  return out;
}

/**
 * A 400 for a name or namespace in the path that could not be an object's (`..`, or a
 * `%` left by double encoding), as the API server's handlers refuse them: such a path
 * never reaches a lookup.
 */
export function checkPathSegments(info: RequestInfo): void {
  for (const [what, value] of [
    ['namespace', info.namespace],
    ['resource name', info.name],
  ] as const) {
    const problems = value ? pathSegmentProblems(value) : [];
    if (problems.length)
      throw badRequest(`invalid ${what} ${JSON.stringify(value)}: [${problems.join(', ')}]`);
  }
}

/** Puts the parsed RequestInfo on ctx.state.requestInfo for every middleware after it. */
export function requestInfoMiddleware(): Koa.Middleware {
  return async (ctx, next) => {
    ctx.state.requestInfo = parseRequestInfo(ctx.method, ctx.path, ctx.querystring);
    await next();
  };
}

/** The RequestInfo a previous requestInfoMiddleware stored, or one parsed now. */
export function requestInfoOf(ctx: Koa.Context): RequestInfo {
  const existing = ctx.state.requestInfo as RequestInfo | undefined;
  if (existing) return existing;
  const info = parseRequestInfo(ctx.method, ctx.path, ctx.querystring);
  ctx.state.requestInfo = info;
  return info;
}
