// Reading one number from a source: a JSON document and a JSONPath, a Prometheus text
// endpoint and label matchers, or the count of Kubernetes objects matching selectors.
// Every failure is a SourceError whose message is one line a user can act on and never
// quotes what the source sent (status shows it to whoever wrote the URL); `reason` labels
// the failure counter (timeout, http, parse, kube, refused, unauthorized).
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import { JSONPath } from 'jsonpath-plus';
import type { KubeClient } from '../kube/client.js';
import { ParseError, parsePrometheusText } from '../metrics/prometheus-text.js';
import { jsonErrorByte } from './json-error.js';
import {
  guardedLookup,
  hostOf,
  OutboundRefused,
  refusedText,
  type OutboundPolicy,
} from './outbound.js';
import type { JsonSource, ObjectsSource, PrometheusSource, SourceKind } from './types.js';

export type FailureReason = 'timeout' | 'http' | 'parse' | 'kube' | 'refused' | 'unauthorized';

export class SourceError extends Error {
  constructor(
    readonly reason: FailureReason,
    message: string,
  ) {
    super(message);
    this.name = 'SourceError';
  }
}

/** A source's body is never read past this (a metrics endpoint, not a download). */
export const MAX_BODY_BYTES = 4 * 1024 * 1024;

/** Socket and TLS failures by their code: messages may quote the peer (a certificate's names). */
const NET_ERRORS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'DNS lookup failed',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ETIMEDOUT: 'connection timed out',
};

function netError(e: NodeJS.ErrnoException): string {
  const code = e.code ?? e.name;
  if (NET_ERRORS[code]) return `${NET_ERRORS[code]} (${code})`;
  if (/^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO|SELF_SIGNED)/.test(code))
    return `TLS: ${code}`;
  if (code.startsWith('HPE_')) return `not an HTTP answer (${code})`;
  return code;
}

/**
 * GET url within timeoutMs, only where `outbound` allows (checked on the address dialled,
 * before any packet goes to it); a redirect, a non-2xx answer, a slow one or a huge one is a
 * SourceError. Messages name the URL without credentials or query.
 */
export function httpGet(
  url: string,
  opts: { timeoutMs: number; outbound: OutboundPolicy; caBundle?: string; accept?: string },
): Promise<string> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return Promise.reject(new SourceError('http', 'the URL does not parse'));
  }
  const shown = `${parsed.origin}${parsed.pathname}`;
  const refuse = (why: string) =>
    Promise.reject(new SourceError('refused', `GET ${shown}: refused: ${why}`));
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    return refuse(`${parsed.protocol} is not http: or https:`);
  }
  const host = hostOf(parsed);
  const grant = opts.outbound.grantOf(parsed);
  if (isIP(host)) {
    // No lookup for an address: Node dials it as is.
    const why = opts.outbound.refusal(host, grant);
    if (why) return refuse(refusedText(host, host, why));
  } else if (grant === 'none' && !opts.outbound.listsAddresses) {
    return refuse(`${host} is not in annex's scaling.allow`);
  }
  const send = parsed.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const fail = (e: SourceError) => {
      clearTimeout(timer);
      req.destroy();
      reject(e);
    };
    const failed = (e: Error) =>
      fail(
        e instanceof OutboundRefused
          ? new SourceError('refused', `GET ${shown}: refused: ${e.message}`)
          : new SourceError('http', `GET ${shown}: ${netError(e)}`),
      );
    const timer = setTimeout(
      () =>
        fail(
          new SourceError('timeout', `GET ${shown}: no answer within ${opts.timeoutMs / 1000}s`),
        ),
      opts.timeoutMs,
    );
    const req = send(
      parsed,
      {
        // A socket of its own, dialled through the guarded lookup: never a pooled one, never a proxy.
        agent: false,
        lookup: guardedLookup(opts.outbound, grant),
        headers: { accept: opts.accept ?? '*/*' },
        ...(opts.caBundle ? { ca: opts.caBundle } : {}),
      },
      (res) => {
        const code = res.statusCode ?? 0;
        if (code < 200 || code >= 300) {
          const redirect = code >= 300 && code < 400 ? ' (redirects are not followed)' : '';
          return fail(new SourceError('http', `GET ${shown}: HTTP ${code}${redirect}`));
        }
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size > MAX_BODY_BYTES) {
            fail(new SourceError('http', `GET ${shown}: body larger than ${MAX_BODY_BYTES} bytes`));
          } else chunks.push(c);
        });
        res.on('end', () => {
          clearTimeout(timer);
          resolve(Buffer.concat(chunks).toString('utf8'));
        });
        res.on('error', failed);
      },
    );
    req.on('error', failed);
    req.end();
  });
}

/** A JSON value that is a number: a finite number, or a string that reads as one. */
function asNumber(v: unknown): number | undefined {
  if (typeof v === 'number' && Number.isFinite(v)) return v;
  if (typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v))) return Number(v);
  return undefined;
}

/** What a JSON value is, by type only: its text came from the source. */
function typeOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'number') return 'a number out of range';
  if (typeof v === 'string') return 'a string';
  return typeof v === 'object' ? 'an object' : `a ${typeof v}`;
}

/** A document of annex's own to try a failing JSONPath on: its error quotes no body. */
const PROBE = { a: [{ a: {} }] };

/** What is wrong with a JSONPath itself: its error on the probe document, if it fails there too. */
function pathFault(path: string): string | undefined {
  try {
    JSONPath({ path, json: PROBE, wrap: true });
    return undefined;
  } catch (e) {
    return (e as Error).message.split('\n')[0];
  }
}

/** The number `path` points to in a JSON body (the first match). */
export function jsonValue(body: string, path: string): number {
  let doc: unknown;
  try {
    doc = JSON.parse(body);
  } catch {
    throw new SourceError('parse', `the body is not JSON (at byte ${jsonErrorByte(body)})`);
  }
  let found: unknown[];
  try {
    found = JSONPath({ path, json: doc as object, wrap: true }) as unknown[];
  } catch (e) {
    const fault = pathFault(path) ?? `fails on this body (${(e as Error).name})`;
    throw new SourceError('parse', `JSONPath ${path}: ${fault}`);
  }
  if (found.length === 0) throw new SourceError('parse', `JSONPath ${path} matches nothing`);
  const n = asNumber(found[0]);
  if (n === undefined) {
    throw new SourceError('parse', `JSONPath ${path} is ${typeOf(found[0])}, not a number`);
  }
  return n;
}

const labelText = (labels: Record<string, string>) =>
  `{${Object.entries(labels)
    .map(([k, v]) => `${k}="${v}"`)
    .join(',')}}`;

/** The sum of every series of `metric` whose labels include `labels`. */
export function prometheusValue(
  body: string,
  metric: string,
  labels: Record<string, string> = {},
): number {
  let samples;
  try {
    samples = parsePrometheusText(body, new Set([metric]));
  } catch (e) {
    // The parser's message names metric and label names it read: the line is enough.
    const where = e instanceof ParseError ? ` (line ${e.line})` : '';
    throw new SourceError('parse', `the body is not Prometheus text${where}`);
  }
  const wanted = Object.entries(labels);
  const matching = samples.filter((s) => wanted.every(([k, v]) => (s.labels[k] ?? '') === v));
  if (matching.length === 0) {
    throw new SourceError('parse', `no series ${metric}${wanted.length ? labelText(labels) : ''}`);
  }
  const sum = matching.reduce((n, s) => n + s.value, 0);
  if (!Number.isFinite(sum)) throw new SourceError('parse', `${metric} is ${sum}`);
  return sum;
}

/** The namespace an objects source counts in: its own by default, `*` for every one. */
export const countNamespace = (src: ObjectsSource, own: string): string =>
  src.namespace === undefined || src.namespace === '' ? own : src.namespace;

/** The list path of `resource` in `namespace` (`*`: every namespace). */
export function listPath(src: ObjectsSource, namespace: string): string {
  const base = src.apiVersion.includes('/') ? `/apis/${src.apiVersion}` : `/api/${src.apiVersion}`;
  const ns = namespace !== '*' ? `/namespaces/${encodeURIComponent(namespace)}` : '';
  return `${base}${ns}/${src.resource}`;
}

/** May the metric count `src` in `namespace`? Throws SourceError('unauthorized') if not. */
export type CountCheck = (src: ObjectsSource, namespace: string) => Promise<void>;

async function countObjects(src: ObjectsSource, ctx: ReadContext): Promise<number> {
  if (!ctx.kube) throw new SourceError('kube', 'no API server to count objects in');
  const namespace = countNamespace(src, ctx.namespace);
  // annex lists with its own identity: outside the metric's namespace, only for an author who may.
  if (namespace !== ctx.namespace) await ctx.mayCount(src, namespace);
  const path = listPath(src, namespace);
  const query = {
    ...(src.labelSelector ? { labelSelector: src.labelSelector } : {}),
    ...(src.fieldSelector ? { fieldSelector: src.fieldSelector } : {}),
  };
  try {
    const list = await ctx.kube.request<{ items?: unknown[] }>('GET', path, {
      query,
      timeoutMs: ctx.timeoutMs,
    });
    return list?.items?.length ?? 0;
  } catch (e) {
    throw new SourceError('kube', `GET ${path}: ${(e as Error).message.split('\n')[0]}`);
  }
}

export interface SourceSpec {
  json?: JsonSource;
  prometheus?: PrometheusSource;
  objects?: ObjectsSource;
}

export function sourceKind(spec: SourceSpec): SourceKind | undefined {
  if (spec.json) return 'json';
  if (spec.prometheus) return 'prometheus';
  if (spec.objects) return 'objects';
  return undefined;
}

export interface ReadContext {
  kube: KubeClient | null;
  /** The ExternalMetric's namespace. */
  namespace: string;
  timeoutMs: number;
  /** Where json and prometheus sources may connect (scaling.allow). */
  outbound: OutboundPolicy;
  mayCount: CountCheck;
}

/** Reads the source once. */
export async function readSource(spec: SourceSpec, ctx: ReadContext): Promise<number> {
  const http = spec.json ?? spec.prometheus;
  if (http) {
    const body = await httpGet(http.url, {
      timeoutMs: ctx.timeoutMs,
      outbound: ctx.outbound,
      accept: spec.json ? 'application/json' : 'text/plain;version=0.0.4',
      ...(http.caBundle ? { caBundle: http.caBundle } : {}),
    });
    if (spec.json) return jsonValue(body, spec.json.path);
    const { metric, labels } = spec.prometheus!;
    return prometheusValue(body, metric, labels);
  }
  if (spec.objects) return countObjects(spec.objects, ctx);
  throw new SourceError('parse', 'no source: set exactly one of json, prometheus, objects');
}
