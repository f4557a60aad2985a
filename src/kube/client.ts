// A small typed client for the kube-apiserver on node:https: JSON in and out, one
// keep-alive agent, every non-2xx answer turned into a KubeApiError carrying the Status.
// Bodies and tokens never reach an error message or a log line.
import { Agent, request as httpsRequest } from 'node:https';
import type { IncomingMessage } from 'node:http';
import type { KubeCredentials } from './kubeconfig.js';
import { KubeApiError, statusFromBody } from './errors.js';
import { startWatch, type WatchEvent, type WatchOptions } from './watch.js';

export { KubeApiError, statusFromBody, type KubeStatus } from './errors.js';

export type { WatchEvent, WatchOptions } from './watch.js';

export type Query = Record<string, string | number | boolean | undefined>;

export interface RequestOptions {
  body?: unknown;
  query?: Query;
  contentType?: string;
  timeoutMs?: number;
}

export interface KubeList<T> {
  apiVersion?: string;
  kind?: string;
  metadata: { resourceVersion?: string; continue?: string; remainingItemCount?: number };
  items: T[];
}

export type PatchType = 'merge' | 'json' | 'strategic' | 'apply';

const PATCH_CONTENT_TYPES: Record<PatchType, string> = {
  merge: 'application/merge-patch+json',
  json: 'application/json-patch+json',
  strategic: 'application/strategic-merge-patch+json',
  // JSON is YAML, so server-side apply accepts a JSON body under this type.
  apply: 'application/apply-patch+yaml',
};

function withQuery(path: string, query?: Query): string {
  if (!query) return path;
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined) params.append(k, String(v));
  const qs = params.toString();
  return qs ? `${path}${path.includes('?') ? '&' : '?'}${qs}` : path;
}

function readText(res: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => chunks.push(c));
    res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    res.on('error', reject);
  });
}

export interface StreamHandle {
  response: Promise<IncomingMessage>;
  abort(): void;
}

export class KubeClient {
  readonly server: string;
  private readonly agent: Agent;
  private readonly defaultTimeoutMs: number;

  constructor(
    private readonly creds: KubeCredentials,
    opts: { timeoutMs?: number } = {},
  ) {
    this.server = creds.server;
    this.defaultTimeoutMs = opts.timeoutMs ?? 30_000;
    this.agent = new Agent({
      keepAlive: true,
      maxFreeSockets: 16,
      ...(creds.ca ? { ca: creds.ca } : {}),
      ...(creds.cert && creds.key ? { cert: creds.cert, key: creds.key } : {}),
      ...(creds.tlsServerName ? { servername: creds.tlsServerName } : {}),
      rejectUnauthorized: !creds.insecureSkipTlsVerify,
      minVersion: 'TLSv1.2',
    });
  }

  /** Opens a request and resolves on the response head; the caller reads (or aborts) the body. */
  open(
    method: string,
    path: string,
    opts: RequestOptions & { accept?: string } = {},
  ): StreamHandle {
    const payload =
      opts.body === undefined ? undefined : Buffer.from(JSON.stringify(opts.body), 'utf8');
    const headers: Record<string, string> = {
      accept: opts.accept ?? 'application/json',
      'user-agent': 'annex',
    };
    const token = this.creds.token?.();
    if (token) headers.authorization = `Bearer ${token}`;
    if (payload) {
      headers['content-type'] = opts.contentType ?? 'application/json';
      headers['content-length'] = String(payload.length);
    }
    const req = httpsRequest(`${this.server}${withQuery(path, opts.query)}`, {
      method,
      agent: this.agent,
      headers,
    });
    const response = new Promise<IncomingMessage>((resolve, reject) => {
      req.on('response', resolve);
      req.on('error', (e) => reject(new Error(`${method} ${path}: ${e.message}`, { cause: e })));
    });
    req.end(payload);
    // destroy() without an error: an error here would surface as an uncaught socket error
    // once the response has started.
    return { response, abort: () => req.destroy() };
  }

  async request<T>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
    const timeoutMs = opts.timeoutMs ?? this.defaultTimeoutMs;
    const handle = this.open(method, path, opts);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        handle.abort();
        reject(new Error(`${method} ${path}: no answer within ${timeoutMs} ms`));
      }, timeoutMs);
    });
    try {
      return await Promise.race([
        (async () => {
          const res = await handle.response;
          const text = await readText(res);
          const code = res.statusCode ?? 0;
          if (code < 200 || code >= 300)
            throw new KubeApiError(method, path, statusFromBody(code, text));
          if (!text) return undefined as T;
          try {
            return JSON.parse(text) as T;
          } catch {
            throw new Error(
              `${method} ${path}: the server answered ${code} with a body that is not JSON`,
            );
          }
        })(),
        timeout,
      ]);
    } finally {
      clearTimeout(timer);
    }
  }

  get<T>(path: string, query?: Query): Promise<T> {
    return this.request<T>('GET', path, { query });
  }

  list<T>(path: string, query?: Query): Promise<KubeList<T>> {
    return this.request<KubeList<T>>('GET', path, { query });
  }

  create<T>(path: string, body: unknown, query?: Query): Promise<T> {
    return this.request<T>('POST', path, { body, query });
  }

  patch<T>(
    path: string,
    body: unknown,
    type: PatchType,
    opts: { fieldManager?: string; force?: boolean } = {},
  ): Promise<T> {
    if (type === 'apply' && !opts.fieldManager) {
      throw new Error(`PATCH ${path}: server-side apply needs a fieldManager`);
    }
    return this.request<T>('PATCH', path, {
      body,
      contentType: PATCH_CONTENT_TYPES[type],
      query: { fieldManager: opts.fieldManager, force: opts.force },
    });
  }

  delete<T>(path: string, query?: Query): Promise<T> {
    return this.request<T>('DELETE', path, { query });
  }

  /**
   * Watches a collection: events from `resourceVersion` (or a fresh list, reported as
   * one RELISTED event, when none is given or the server says 410). Reconnects with
   * backoff until stop() is called; every failure goes to onError, never thrown.
   */
  watch<T>(
    path: string,
    opts: WatchOptions,
    onEvent: (e: WatchEvent<T>) => void,
    onError: (err: Error) => void,
  ): () => void {
    return startWatch<T>(this, path, opts, onEvent, onError);
  }

  /** Closes idle keep-alive sockets (open watches should be stopped first). */
  close(): void {
    this.agent.destroy();
  }
}
