// Requests straight to a test annex (not through the API server), as whoever the test
// needs: a bearer token, the front proxy's certificate with X-Remote-* headers, or nobody;
// and a poll that times how long a condition takes. Used by the fault tests, which must
// reach annex while the API server is down.
import { readFileSync } from 'node:fs';
import { request } from 'node:https';

export interface DirectAnswer {
  status: number;
  /** Parsed JSON, or the text when it is not JSON (probes). */
  body: any;
}

export interface DirectIdentity {
  token?: string;
  /** The front proxy: its client certificate (and key) and the identity it asserts. */
  proxy?: { user: string; groups?: string[]; cert?: [certFile: string, keyFile: string] };
}

/** GET `path` (or POST `body` as JSON) on 127.0.0.1:port, trusting annex's CA. */
export function directRequest(
  to: { port: number; caFile: string },
  path: string,
  id: DirectIdentity,
  body?: unknown,
): Promise<DirectAnswer> {
  const headers: Record<string, string | string[]> = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (id.token) headers.authorization = `Bearer ${id.token}`;
  if (id.proxy) {
    headers['x-remote-user'] = id.proxy.user;
    if (id.proxy.groups) headers['x-remote-group'] = id.proxy.groups;
  }
  const cert = id.proxy?.cert;
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: to.port,
        path,
        method: body === undefined ? 'GET' : 'POST',
        headers,
        ca: readFileSync(to.caFile),
        servername: 'localhost',
        agent: false, // a connection per request: certificate verdicts are per connection
        ...(cert ? { cert: readFileSync(cert[0]), key: readFileSync(cert[1]) } : {}),
      },
      (res) => {
        let text = '';
        res.on('data', (d) => (text += d));
        res.on('end', () => {
          let parsed: any = text;
          try {
            parsed = JSON.parse(text);
          } catch {
            /* probes answer text */
          }
          resolve({ status: res.statusCode ?? 0, body: parsed });
        });
      },
    );
    req.on('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

/** An AdmissionReview of an unlabelled Deployment `web` in `namespace`, as the API server sends it. */
export function deploymentReview(namespace: string): object {
  const gvk = { group: 'apps', version: 'v1', kind: 'Deployment' };
  const gvr = { group: 'apps', version: 'v1', resource: 'deployments' };
  return {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: `uid-${namespace}`,
      kind: gvk,
      resource: gvr,
      requestKind: gvk,
      requestResource: gvr,
      namespace,
      name: 'web',
      operation: 'CREATE',
      userInfo: { username: 'someone' },
      object: {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'web', namespace },
        spec: { template: { spec: { containers: [{ name: 'c', image: 'nginx' }] } } },
      },
      oldObject: null,
      dryRun: false,
      options: { apiVersion: 'meta.k8s.io/v1', kind: 'CreateOptions' },
    },
  };
}

/** Polls `f` every `everyMs` until it is true; resolves with the milliseconds it took. */
export async function until(
  what: string,
  f: () => Promise<boolean>,
  timeoutMs = 60_000,
  everyMs = 100,
): Promise<number> {
  const t0 = Date.now();
  let last: unknown;
  for (;;) {
    try {
      if (await f()) return Date.now() - t0;
    } catch (e) {
      last = e;
    }
    if (Date.now() - t0 > timeoutMs)
      throw new Error(`${what}: not within ${timeoutMs} ms (${String(last)})`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
