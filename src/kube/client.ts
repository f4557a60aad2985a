// A small typed client for the kube-apiserver on node:https: JSON in and out, one
// keep-alive agent, every non-2xx answer turned into a KubeApiError carrying the Status.
// Bodies and tokens never reach an error message or a log line.
import { Agent, request as httpsRequest, type AgentOptions } from 'node:https';
import type { ClientRequest, IncomingMessage } from 'node:http';
import type { Credential } from './credentials.js';
import type { KubeCredentials } from './kubeconfig.js';
import { KubeApiError, KubeUnreachableError, statusFromBody } from './errors.js';
import { startWatch, type WatchEvent, type WatchOptions } from './reflector.js';

export { KubeApiError, KubeUnreachableError, statusFromBody, type KubeStatus } from './errors.js';

export type { WatchEvent, WatchOptions } from './reflector.js';

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

export interface StreamHandle {
  response: Promise<IncomingMessage>;
  abort(): void;
}

interface Attempt {
  /** The response head, and whether a 401 made a retry with a fresh credential worthwhile. */
  response: Promise<{ res: IncomingMessage; retry: boolean }>;
  abort(): void;
}

/** Node's socket and TLS failures: the server is not there, or not who we trust. */
function unreachable(server: string, what: string, e: NodeJS.ErrnoException): Error {
  const why = e.code && !e.message.includes(e.code) ? `${e.message} (${e.code})` : e.message;
  return new KubeUnreachableError(
    `cannot connect to the API server at ${server}: ${why} (${what})`,
    {
      cause: e,
    },
  );
}

export class KubeClient {
  readonly server: string;
  private readonly agent: Agent;
  private readonly tls: AgentOptions;
  /** The agent for an exec plugin's client certificate, and the ones it replaced. */
  private certAgent?: { cert: Buffer; key: Buffer; agent: Agent };
  private readonly retired: Agent[] = [];
  /** Waiting for any answer from the API server (onceAnswered). */
  private readonly answered = new Set<() => void>();
  readonly timeoutMs: number;

  /**
   * `timeoutMs` is the budget for connecting and for each answer (the response head,
   * then every pause in its body; an exec plugin run gets the same): a dead or silent
   * API server fails within it instead of hanging.
   */
  constructor(
    private readonly creds: KubeCredentials,
    opts: { timeoutMs?: number } = {},
  ) {
    this.server = creds.server;
    this.timeoutMs = opts.timeoutMs ?? 10_000;
    this.tls = {
      keepAlive: true,
      maxFreeSockets: 16,
      ...(creds.ca ? { ca: creds.ca } : {}),
      ...(creds.tlsServerName ? { servername: creds.tlsServerName } : {}),
      rejectUnauthorized: !creds.insecureSkipTlsVerify,
      minVersion: 'TLSv1.2',
    };
    this.agent = new Agent({
      ...this.tls,
      ...(creds.cert && creds.key ? { cert: creds.cert, key: creds.key } : {}),
    });
  }

  private agentFor(cred: Credential | undefined): Agent {
    if (!cred?.cert || !cred.key) return this.agent;
    const cur = this.certAgent;
    if (cur && cur.cert.equals(cred.cert) && cur.key.equals(cred.key)) return cur.agent;
    // A rotated certificate: new connections use it; requests in flight finish on the old one.
    if (cur) this.retired.push(cur.agent);
    const agent = new Agent({ ...this.tls, cert: cred.cert, key: cred.key });
    this.certAgent = { cert: cred.cert, key: cred.key, agent };
    return agent;
  }

  private attempt(
    method: string,
    path: string,
    opts: RequestOptions & { accept?: string },
  ): Attempt {
    const budget = opts.timeoutMs ?? this.timeoutMs;
    const what = `${method} ${path}`;
    let req: ClientRequest | undefined;
    let aborted = false;
    const response = (async () => {
      const auth = this.creds.auth;
      const cred = auth ? await auth.get({ timeoutMs: budget }) : undefined;
      if (aborted) throw new Error(`${what}: aborted`);
      const payload =
        opts.body === undefined ? undefined : Buffer.from(JSON.stringify(opts.body), 'utf8');
      const headers: Record<string, string> = {
        accept: opts.accept ?? 'application/json',
        'user-agent': 'annex',
      };
      if (cred?.token) headers.authorization = `Bearer ${cred.token}`;
      if (payload) {
        headers['content-type'] = opts.contentType ?? 'application/json';
        headers['content-length'] = String(payload.length);
      }
      const r = httpsRequest(`${this.server}${withQuery(path, opts.query)}`, {
        method,
        agent: this.agentFor(cred),
        headers,
      });
      req = r;
      return new Promise<{ res: IncomingMessage; retry: boolean }>((resolve, reject) => {
        const timer = setTimeout(() => {
          reject(
            new KubeUnreachableError(
              `the API server at ${this.server} did not answer within ${budget / 1000} s (${what})`,
            ),
          );
          r.destroy();
        }, budget);
        r.on('response', (res) => {
          clearTimeout(timer);
          const ok = (res.statusCode ?? 0) >= 200 && (res.statusCode ?? 0) < 300;
          if (ok && this.answered.size) this.notifyAnswered();
          // A rejected credential is dropped at once, for this caller's retry and the next ones.
          const retry = res.statusCode === 401 && !!cred && !!auth?.rejected(cred);
          resolve({ res, retry });
        });
        r.on('error', (e) => {
          clearTimeout(timer);
          reject(aborted ? new Error(`${what}: aborted`) : unreachable(this.server, what, e));
        });
        r.end(payload);
      });
    })();
    // destroy() without an error: an error here would surface as an uncaught socket error
    // once the response has started.
    return {
      response,
      abort: () => {
        aborted = true;
        req?.destroy();
      },
    };
  }

  /**
   * Calls `cb` once, when the API server next answers a request of this client with a 2xx
   * (it serves again). Watches backing off after a connection failure use it to reconnect
   * as soon as the server is back, not when their backoff ends. Returns an unsubscribe.
   */
  onceAnswered(cb: () => void): () => void {
    this.answered.add(cb);
    return () => this.answered.delete(cb);
  }

  private notifyAnswered(): void {
    const cbs = [...this.answered];
    this.answered.clear();
    for (const cb of cbs) cb();
  }

  /** Opens a request and resolves on the response head; the caller reads (or aborts) the body. */
  open(
    method: string,
    path: string,
    opts: RequestOptions & { accept?: string } = {},
  ): StreamHandle {
    const a = this.attempt(method, path, opts);
    return { response: a.response.then((r) => r.res), abort: a.abort };
  }

  async request<T>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
    const budget = opts.timeoutMs ?? this.timeoutMs;
    for (let attempt = 0; ; attempt++) {
      const a = this.attempt(method, path, opts);
      const { res, retry } = await a.response;
      const text = await this.readBody(res, budget, `${method} ${path}`);
      const code = res.statusCode ?? 0;
      // One retry, as a fresh exec credential or re-read token file may be accepted.
      if (code === 401 && retry && attempt === 0) continue;
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
    }
  }

  /** The body as text; a pause longer than the budget fails (the server went silent). */
  private readBody(res: IncomingMessage, budget: number, what: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let timer: NodeJS.Timeout | undefined;
      const arm = () => {
        clearTimeout(timer);
        timer = setTimeout(() => {
          reject(
            new KubeUnreachableError(
              `the API server at ${this.server} stopped answering for ${budget / 1000} s (${what})`,
            ),
          );
          res.destroy();
        }, budget);
      };
      arm();
      res.on('data', (c: Buffer) => {
        chunks.push(c);
        arm();
      });
      res.on('end', () => {
        clearTimeout(timer);
        resolve(Buffer.concat(chunks).toString('utf8'));
      });
      res.on('error', (e) => {
        clearTimeout(timer);
        reject(unreachable(this.server, what, e));
      });
    });
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
    this.certAgent?.agent.destroy();
    for (const a of this.retired) a.destroy();
  }
}
