// Reading one number from a source: a JSON document and a JSONPath, a Prometheus text
// endpoint and label matchers, or the count of Kubernetes objects matching selectors.
// Every failure is a SourceError whose message is one line a user can act on; `reason`
// labels the failure counter (timeout, http, parse, kube).
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { JSONPath } from 'jsonpath-plus';
import type { KubeClient } from '../kube/client.js';
import { parsePrometheusText } from '../metrics/prometheus-text.js';
import type { JsonSource, ObjectsSource, PrometheusSource, SourceKind } from './types.js';

export type FailureReason = 'timeout' | 'http' | 'parse' | 'kube';

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

/** GET url within timeoutMs; a non-2xx answer, a slow one or a huge one is a SourceError. */
export function httpGet(
  url: string,
  opts: { timeoutMs: number; caBundle?: string; accept?: string },
): Promise<string> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return Promise.reject(new SourceError('http', `${url} is not a URL`));
  }
  const send = parsed.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const fail = (e: SourceError) => {
      req.destroy();
      reject(e);
    };
    const timer = setTimeout(
      () =>
        fail(new SourceError('timeout', `GET ${url}: no answer within ${opts.timeoutMs / 1000}s`)),
      opts.timeoutMs,
    );
    const req = send(
      parsed,
      {
        headers: { accept: opts.accept ?? '*/*' },
        ...(opts.caBundle ? { ca: opts.caBundle } : {}),
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size > MAX_BODY_BYTES) {
            clearTimeout(timer);
            fail(new SourceError('http', `GET ${url}: body larger than ${MAX_BODY_BYTES} bytes`));
          } else chunks.push(c);
        });
        res.on('end', () => {
          clearTimeout(timer);
          const code = res.statusCode ?? 0;
          if (code < 200 || code >= 300) {
            reject(new SourceError('http', `GET ${url}: HTTP ${code}`));
          } else resolve(Buffer.concat(chunks).toString('utf8'));
        });
        res.on('error', (e) => {
          clearTimeout(timer);
          reject(new SourceError('http', `GET ${url}: ${e.message}`));
        });
      },
    );
    req.on('error', (e) => {
      clearTimeout(timer);
      reject(new SourceError('http', `GET ${url}: ${e.message}`));
    });
    req.end();
  });
}

/** A JSON value that is a number: a finite number, or a string that reads as one. */
function asNumber(v: unknown): number | undefined {
  if (typeof v === 'number' && Number.isFinite(v)) return v;
  if (typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v))) return Number(v);
  return undefined;
}

const preview = (v: unknown) => {
  const text = JSON.stringify(v) ?? String(v);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
};

/** The number `path` points to in a JSON body (the first match). */
export function jsonValue(body: string, path: string): number {
  let doc: unknown;
  try {
    doc = JSON.parse(body);
  } catch (e) {
    throw new SourceError('parse', `the body is not JSON (${(e as Error).message})`);
  }
  let found: unknown[];
  try {
    found = JSONPath({ path, json: doc as object, wrap: true }) as unknown[];
  } catch (e) {
    throw new SourceError('parse', `JSONPath ${path}: ${(e as Error).message}`);
  }
  if (found.length === 0) throw new SourceError('parse', `JSONPath ${path} matches nothing`);
  const n = asNumber(found[0]);
  if (n === undefined) {
    throw new SourceError('parse', `JSONPath ${path} is ${preview(found[0])}, not a number`);
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
    throw new SourceError('parse', `not Prometheus text: ${(e as Error).message}`);
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

/** The list path of `resource` in `namespace` ('' or '*': every namespace). */
export function listPath(src: ObjectsSource, namespace: string): string {
  const base = src.apiVersion.includes('/') ? `/apis/${src.apiVersion}` : `/api/${src.apiVersion}`;
  const ns = namespace && namespace !== '*' ? `/namespaces/${encodeURIComponent(namespace)}` : '';
  return `${base}${ns}/${src.resource}`;
}

async function countObjects(
  kube: KubeClient | null,
  src: ObjectsSource,
  namespace: string,
  timeoutMs: number,
): Promise<number> {
  if (!kube) throw new SourceError('kube', 'no API server to count objects in');
  const path = listPath(src, src.namespace ?? namespace);
  const query = {
    ...(src.labelSelector ? { labelSelector: src.labelSelector } : {}),
    ...(src.fieldSelector ? { fieldSelector: src.fieldSelector } : {}),
  };
  try {
    const list = await kube.request<{ items?: unknown[] }>('GET', path, { query, timeoutMs });
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

/** Reads the source once. `namespace` is the ExternalMetric's. */
export async function readSource(
  spec: SourceSpec,
  ctx: { kube: KubeClient | null; namespace: string; timeoutMs: number },
): Promise<number> {
  if (spec.json) {
    const { url, caBundle, path } = spec.json;
    const body = await httpGet(url, {
      timeoutMs: ctx.timeoutMs,
      accept: 'application/json',
      ...(caBundle ? { caBundle } : {}),
    });
    return jsonValue(body, path);
  }
  if (spec.prometheus) {
    const { url, caBundle, metric, labels } = spec.prometheus;
    const body = await httpGet(url, {
      timeoutMs: ctx.timeoutMs,
      accept: 'text/plain;version=0.0.4',
      ...(caBundle ? { caBundle } : {}),
    });
    return prometheusValue(body, metric, labels);
  }
  if (spec.objects) return countObjects(ctx.kube, spec.objects, ctx.namespace, ctx.timeoutMs);
  throw new SourceError('parse', 'no source: set exactly one of json, prometheus, objects');
}
