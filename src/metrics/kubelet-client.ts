// One GET of a kubelet's /metrics/resource, as metrics-server's resource client does it:
// the node's preferred address, the port from node status, a bearer token and/or a client
// certificate, kubelet TLS verified against a CA unless explicitly skipped, a deadline.
import https from 'node:https';
import type { IncomingMessage } from 'node:http';

export interface NodeAddress {
  type: string;
  address: string;
}

/** The fields of a core/v1 Node the scraper reads. */
export interface NodeLike {
  metadata: {
    name: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  status?: {
    addresses?: NodeAddress[];
    daemonEndpoints?: { kubeletEndpoint?: { Port?: number } };
  };
}

/** metrics-server's release manifests; its binary default puts Hostname first instead. */
export const DEFAULT_ADDRESS_TYPES = ['InternalIP', 'ExternalIP', 'Hostname'];
export const DEFAULT_KUBELET_PORT = 10250;
/** Per-node annotation that replaces the path (metrics-server v0.7.0+). */
export const PATH_ANNOTATION = 'metrics.k8s.io/resource-metrics-path';

export interface KubeletTarget {
  host: string;
  port: number;
  path: string;
}

/** Where to scrape a node: first address of the first preferred type that has one. */
export function kubeletTarget(
  node: NodeLike,
  preferredTypes: readonly string[] = DEFAULT_ADDRESS_TYPES,
  defaultPort = DEFAULT_KUBELET_PORT,
): KubeletTarget {
  const addresses = node.status?.addresses ?? [];
  let host: string | undefined;
  for (const type of preferredTypes) {
    host = addresses.find((a) => a.type === type && a.address !== '')?.address;
    if (host) break;
  }
  if (!host) throw new Error(`no address matched types [${preferredTypes.join(' ')}]`);
  const statusPort = node.status?.daemonEndpoints?.kubeletEndpoint?.Port;
  const path = node.metadata.annotations?.[PATH_ANNOTATION] || '/metrics/resource';
  return { host, port: statusPort && statusPort > 0 ? statusPort : defaultPort, path };
}

/** URL text for logs, with IPv6 brackets as Go's JoinHostPort adds them. */
export function targetUrl(t: KubeletTarget): string {
  const host = t.host.includes(':') ? `[${t.host}]` : t.host;
  return `https://${host}:${t.port}${t.path}`;
}

export interface KubeletTls {
  /** PEM CA bundle that signs kubelet serving certificates. */
  ca?: string | Buffer;
  /** Skip verification of kubelet serving certificates (minikube's self-signed kubelets). */
  insecureSkipTLSVerify?: boolean;
  /** PEM client certificate and key for mTLS to the kubelet. */
  cert?: string | Buffer;
  key?: string | Buffer;
}

/** Reject the combinations metrics-server's option validation rejects. */
export function validateKubeletTls(tls: KubeletTls): void {
  if (tls.insecureSkipTLSVerify && tls.ca) {
    throw new Error('kubelet TLS: a CA and insecureSkipTLSVerify cannot be used together');
  }
  if (Boolean(tls.cert) !== Boolean(tls.key)) {
    throw new Error('kubelet TLS: a client certificate needs its key, and a key its certificate');
  }
}

export function kubeletAgent(tls: KubeletTls, maxSockets: number): https.Agent {
  validateKubeletTls(tls);
  return new https.Agent({
    keepAlive: true,
    maxSockets,
    minVersion: 'TLSv1.2',
    rejectUnauthorized: !tls.insecureSkipTLSVerify,
    ...(tls.ca ? { ca: tls.ca } : {}),
    ...(tls.cert && tls.key ? { cert: tls.cert, key: tls.key } : {}),
  });
}

export interface FetchOptions {
  agent: https.Agent;
  token?: string;
  signal: AbortSignal;
  maxBytes: number;
}

/** GET the body; any status but 200 is an error, and a body is never put in an error. */
export function fetchKubelet(target: KubeletTarget, opts: FetchOptions): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      {
        host: target.host,
        port: target.port,
        path: target.path,
        method: 'GET',
        agent: opts.agent,
        signal: opts.signal,
        headers: opts.token ? { Authorization: `Bearer ${opts.token}` } : {},
      },
      (res: IncomingMessage) => {
        if (res.statusCode !== 200) {
          res.resume();
          reject(
            new Error(`request failed, status: "${res.statusCode} ${res.statusMessage ?? ''}"`),
          );
          return;
        }
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > opts.maxBytes) {
            req.destroy(new Error(`response larger than ${opts.maxBytes} bytes`));
            return;
          }
          chunks.push(chunk);
        });
        res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
        res.on('error', reject);
        res.on('close', () => {
          if (!res.complete) reject(new Error('connection closed before the body ended'));
        });
      },
    );
    req.on('error', reject);
    req.end();
  });
}
