// Where the kube-apiserver is and who we are to it: a kubeconfig file (current context)
// or the Pod's mounted ServiceAccount. Only what annex needs — client certificates and
// bearer tokens — and a clear error, naming the file and the field, for everything else.
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, dirname, isAbsolute, join, resolve } from 'node:path';
import { parse } from 'yaml';

/** Returns the bearer token to send now (re-read from its file when that file rotates). */
export type TokenSource = () => string;

export interface KubeCredentials {
  /** Base URL, e.g. https://127.0.0.1:6443 (no trailing slash). */
  server: string;
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
  token?: TokenSource;
  insecureSkipTlsVerify?: boolean;
  /** SNI / name checked in the server certificate, when it differs from the URL host. */
  tlsServerName?: string;
  /** Where these came from ("/path/kubeconfig" or "in-cluster"), for error messages. */
  source: string;
}

/** Reads a file; injectable so that parsing stays testable without touching the disk. */
export type FileReader = (path: string) => Buffer;

export class KubeconfigError extends Error {
  override name = 'KubeconfigError';
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

function named(list: unknown, name: string, what: string, file: string): Obj {
  if (!Array.isArray(list)) throw new KubeconfigError(`${file}: no "${what}s" list`);
  const entry = list.find((e) => isObj(e) && e.name === name) as Obj | undefined;
  if (!entry) throw new KubeconfigError(`${file}: ${what} "${name}" not found in "${what}s"`);
  const body = entry[what];
  if (!isObj(body)) throw new KubeconfigError(`${file}: ${what} "${name}" has no "${what}" field`);
  return body;
}

function str(o: Obj, key: string): string | undefined {
  const v = o[key];
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/**
 * Kubeconfig YAML → credentials for its current context (or `context`). Relative file
 * paths are resolved against the kubeconfig's directory, as kubectl does.
 */
export function parseKubeconfig(
  text: string,
  file: string,
  opts: { context?: string; readFile?: FileReader; tokenRefreshMs?: number } = {},
): KubeCredentials {
  const read = opts.readFile ?? ((p: string) => readFileSync(p));
  let doc: unknown;
  try {
    doc = parse(text);
  } catch (e) {
    throw new KubeconfigError(`${file}: not valid YAML: ${(e as Error).message.split('\n')[0]}`);
  }
  if (!isObj(doc)) throw new KubeconfigError(`${file}: not a kubeconfig (expected a YAML mapping)`);

  const contextName = opts.context ?? str(doc, 'current-context');
  if (!contextName) throw new KubeconfigError(`${file}: "current-context" is not set`);
  const context = named(doc.contexts, contextName, 'context', file);
  const clusterName = str(context, 'cluster');
  if (!clusterName) throw new KubeconfigError(`${file}: context "${contextName}" has no "cluster"`);
  const cluster = named(doc.clusters, clusterName, 'cluster', file);

  const at = (p: string) => (isAbsolute(p) ? p : resolve(dirname(file), p));
  const fromFile = (p: string, field: string, owner: string): Buffer => {
    try {
      return read(at(p));
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code ?? (e as Error).message;
      throw new KubeconfigError(`${file}: ${owner}: cannot read ${field} "${at(p)}" (${code})`);
    }
  };
  const b64 = (v: string) => Buffer.from(v, 'base64');
  // "<key>-data" (base64) wins over "<key>" (a file), as in client-go.
  const dataOrFile = (o: Obj, key: string, owner: string): Buffer | undefined => {
    const data = str(o, `${key}-data`);
    if (data) return b64(data);
    const path = str(o, key);
    return path ? fromFile(path, key, owner) : undefined;
  };

  const owner = `cluster "${clusterName}"`;
  const server = str(cluster, 'server');
  if (!server) throw new KubeconfigError(`${file}: ${owner} has no "server"`);
  let url: URL;
  try {
    url = new URL(server);
  } catch {
    throw new KubeconfigError(`${file}: ${owner}: "server" is not a URL: ${server}`);
  }
  if (url.protocol !== 'https:') {
    throw new KubeconfigError(`${file}: ${owner}: "server" must be https (got ${url.protocol})`);
  }
  const creds: KubeCredentials = { server: server.replace(/\/+$/, ''), source: file };
  const ca = dataOrFile(cluster, 'certificate-authority', owner);
  if (ca) creds.ca = ca;
  if (cluster['insecure-skip-tls-verify'] === true) creds.insecureSkipTlsVerify = true;
  const sni = str(cluster, 'tls-server-name');
  if (sni) creds.tlsServerName = sni;

  const userName = str(context, 'user');
  if (!userName) return creds; // anonymous: allowed, the server decides
  const user = named(doc.users, userName, 'user', file);
  const uOwner = `user "${userName}"`;
  for (const unsupported of ['exec', 'auth-provider', 'username']) {
    if (user[unsupported] !== undefined) {
      throw new KubeconfigError(
        `${file}: ${uOwner}: "${unsupported}" credentials are not supported; use a client certificate or a token`,
      );
    }
  }
  const cert = dataOrFile(user, 'client-certificate', uOwner);
  const key = dataOrFile(user, 'client-key', uOwner);
  if (cert && !key)
    throw new KubeconfigError(`${file}: ${uOwner} has a client certificate but no "client-key"`);
  if (key && !cert)
    throw new KubeconfigError(`${file}: ${uOwner} has a client key but no "client-certificate"`);
  if (cert && key) Object.assign(creds, { cert, key });
  const token = str(user, 'token');
  const tokenFile = str(user, 'tokenFile');
  if (token) creds.token = () => token;
  else if (tokenFile)
    creds.token = fileToken(at(tokenFile), { readFile: read, refreshMs: opts.tokenRefreshMs });
  if (!creds.cert && !creds.token) {
    throw new KubeconfigError(
      `${file}: ${uOwner} has no credentials: set "client-certificate(-data)" + "client-key(-data)", "token" or "tokenFile"`,
    );
  }
  return creds;
}

export function loadKubeconfig(file: string, opts: { context?: string } = {}): KubeCredentials {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new KubeconfigError(
      `cannot read kubeconfig "${file}" (${(e as NodeJS.ErrnoException).code ?? e})`,
    );
  }
  return parseKubeconfig(text, file, opts);
}

/**
 * A token read from a file and re-read every `refreshMs` (client-go: 1 min): bound
 * ServiceAccount tokens are rotated by the kubelet. A failed re-read keeps the last token.
 */
export function fileToken(
  file: string,
  opts: { readFile?: FileReader; refreshMs?: number | undefined; now?: () => number } = {},
): TokenSource {
  const read = opts.readFile ?? ((p: string) => readFileSync(p));
  const refreshMs = opts.refreshMs ?? 60_000;
  const now = opts.now ?? Date.now;
  const load = () => {
    const t = read(file).toString('utf8').trim();
    if (!t) throw new KubeconfigError(`token file "${file}" is empty`);
    return t;
  };
  let token: string;
  try {
    token = load();
  } catch (e) {
    if (e instanceof KubeconfigError) throw e;
    throw new KubeconfigError(
      `cannot read token file "${file}" (${(e as NodeJS.ErrnoException).code ?? e})`,
    );
  }
  let readAt = now();
  return () => {
    if (now() - readAt >= refreshMs) {
      readAt = now();
      try {
        token = load();
      } catch {
        // keep the previous token: a rotation in progress must not break every request
      }
    }
    return token;
  };
}

export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/** The Pod's own identity: the mounted ServiceAccount token and CA, the service env vars. */
export function inCluster(
  opts: {
    env?: NodeJS.ProcessEnv;
    dir?: string;
    readFile?: FileReader;
    tokenRefreshMs?: number;
  } = {},
): KubeCredentials {
  const env = opts.env ?? process.env;
  const dir = opts.dir ?? SERVICE_ACCOUNT_DIR;
  const read = opts.readFile ?? ((p: string) => readFileSync(p));
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  if (!host || !port) {
    throw new KubeconfigError(
      'not running in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set (pass a kubeconfig)',
    );
  }
  let ca: Buffer;
  try {
    ca = read(`${dir}/ca.crt`);
  } catch (e) {
    throw new KubeconfigError(
      `in-cluster: cannot read "${dir}/ca.crt" (${(e as NodeJS.ErrnoException).code ?? e})`,
    );
  }
  const h = host.includes(':') ? `[${host}]` : host;
  return {
    server: `https://${h}:${port}`,
    ca,
    token: fileToken(`${dir}/token`, { readFile: read, refreshMs: opts.tokenRefreshMs }),
    source: 'in-cluster',
  };
}

/**
 * The usual lookup: an explicit file, else $KUBECONFIG (its first entry), else the Pod's
 * ServiceAccount when running in a cluster, else ~/.kube/config.
 */
export function defaultCredentials(
  opts: { kubeconfig?: string; context?: string; env?: NodeJS.ProcessEnv } = {},
): KubeCredentials {
  const env = opts.env ?? process.env;
  if (opts.kubeconfig) return loadKubeconfig(opts.kubeconfig, opts);
  const fromEnv = env.KUBECONFIG?.split(delimiter).find((p) => p !== '');
  if (fromEnv) return loadKubeconfig(fromEnv, opts);
  if (env.KUBERNETES_SERVICE_HOST) return inCluster({ env });
  const home = env.HOME ?? homedir();
  return loadKubeconfig(join(home, '.kube', 'config'), opts);
}
