// Where the kube-apiserver is and who we are to it, found as kubectl finds it: --kubeconfig,
// else $KUBECONFIG (a path.delimiter list, merged first-wins), else ~/.kube/config, else the
// Pod's mounted ServiceAccount; then the current context or --context. Client certificates,
// bearer tokens (inline or a rotating file) and exec plugins; a clear error, naming the
// file and the field, for everything else.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, dirname, isAbsolute, join, resolve } from 'node:path';
import { parse } from 'yaml';
import { staticToken, tokenFileSource, type CredentialSource } from './credentials.js';
import { KubeconfigError } from './errors.js';
import { execCredentialSource, parseExecConfig, type ExecClusterInfo } from './exec.js';
import { fileToken, type FileReader } from './token.js';

export { KubeconfigError } from './errors.js';
export { fileToken, type FileReader, type FileToken } from './token.js';

export interface KubeCredentials {
  /** Base URL, e.g. https://127.0.0.1:6443 (no trailing slash). */
  server: string;
  ca?: Buffer;
  /** A client certificate named in the kubeconfig (exec plugins' come through `auth`). */
  cert?: Buffer;
  key?: Buffer;
  /** Asked before each request: a bearer token and/or an exec plugin's client certificate. */
  auth?: CredentialSource;
  insecureSkipTlsVerify?: boolean;
  /** SNI / name checked in the server certificate, when it differs from the URL host. */
  tlsServerName?: string;
  /** Where these came from ("/path/kubeconfig", "a:b" or "in-cluster"), for messages. */
  source: string;
  /** The context used, when they came from a kubeconfig. */
  context?: string;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

function str(o: Obj, key: string): string | undefined {
  const v = o[key];
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/** One named entry and the file it came from (relative paths resolve against that file). */
interface Entry {
  body: Obj;
  file: string;
}

/** Several kubeconfig files as kubectl merges them: for every name, the first file wins. */
export interface MergedKubeconfig {
  files: string[];
  currentContext?: string;
  contexts: Map<string, Entry>;
  clusters: Map<string, Entry>;
  users: Map<string, Entry>;
}

const KINDS = ['context', 'cluster', 'user'] as const;

/** Parses and merges kubeconfig texts in order; an empty file contributes nothing. */
export function mergeKubeconfigs(docs: { file: string; text: string }[]): MergedKubeconfig {
  const merged: MergedKubeconfig = {
    files: docs.map((d) => d.file),
    contexts: new Map(),
    clusters: new Map(),
    users: new Map(),
  };
  for (const { file, text } of docs) {
    let doc: unknown;
    try {
      // Oddities that do not stop the parse (an unknown tag) are not worth a Node warning.
      doc = parse(text, { logLevel: 'error' });
    } catch (e) {
      throw new KubeconfigError(`${file}: not valid YAML: ${(e as Error).message.split('\n')[0]}`);
    }
    if (doc === null || doc === undefined) continue;
    if (!isObj(doc))
      throw new KubeconfigError(`${file}: not a kubeconfig (expected a YAML mapping)`);
    merged.currentContext ??= str(doc, 'current-context');
    for (const kind of KINDS) {
      const list = doc[`${kind}s`];
      if (list === undefined || list === null) continue;
      if (!Array.isArray(list)) throw new KubeconfigError(`${file}: "${kind}s" is not a list`);
      const into = merged[`${kind}s`];
      for (const e of list) {
        if (!isObj(e) || typeof e.name !== 'string' || into.has(e.name)) continue;
        if (!isObj(e[kind]))
          throw new KubeconfigError(`${file}: ${kind} "${e.name}" has no "${kind}" field`);
        into.set(e.name, { body: e[kind], file });
      }
    }
  }
  return merged;
}

export interface SelectOptions {
  /** The context to use instead of current-context (--context / kube.context). */
  context?: string | undefined;
  readFile?: FileReader | undefined;
  tokenRefreshMs?: number | undefined;
}

/** The credentials of one context of a merged kubeconfig. */
export function credentialsFor(
  merged: MergedKubeconfig,
  opts: SelectOptions = {},
): KubeCredentials {
  const read = opts.readFile ?? ((p: string) => readFileSync(p));
  const all = merged.files.join(delimiter);
  const find = (kind: (typeof KINDS)[number], name: string, from: string): Entry => {
    const e = merged[`${kind}s`].get(name);
    if (!e) throw new KubeconfigError(`${from}: ${kind} "${name}" not found in "${kind}s"`);
    return e;
  };

  const contextName = opts.context || merged.currentContext;
  if (!contextName) throw new KubeconfigError(`${all}: "current-context" is not set`);
  const { body: context, file: contextFile } = find('context', contextName, all);
  const clusterName = str(context, 'cluster');
  if (!clusterName)
    throw new KubeconfigError(`${contextFile}: context "${contextName}" has no "cluster"`);
  const { body: cluster, file: clusterFile } = find('cluster', clusterName, contextFile);

  const fileReader = (file: string) => {
    const at = (p: string) => (isAbsolute(p) ? p : resolve(dirname(file), p));
    const fromFile = (p: string, field: string, owner: string): Buffer => {
      try {
        return read(at(p));
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code ?? (e as Error).message;
        throw new KubeconfigError(`${file}: ${owner}: cannot read ${field} "${at(p)}" (${code})`);
      }
    };
    // "<key>-data" (base64) wins over "<key>" (a file), as in client-go.
    const dataOrFile = (o: Obj, key: string, owner: string): Buffer | undefined => {
      const data = str(o, `${key}-data`);
      if (data) return Buffer.from(data, 'base64');
      const path = str(o, key);
      return path ? fromFile(path, key, owner) : undefined;
    };
    return { at, dataOrFile };
  };

  const owner = `cluster "${clusterName}"`;
  const server = str(cluster, 'server');
  if (!server) throw new KubeconfigError(`${clusterFile}: ${owner} has no "server"`);
  let url: URL;
  try {
    url = new URL(server);
  } catch {
    throw new KubeconfigError(`${clusterFile}: ${owner}: "server" is not a URL: ${server}`);
  }
  if (url.protocol !== 'https:') {
    throw new KubeconfigError(
      `${clusterFile}: ${owner}: "server" must be https (got ${url.protocol})`,
    );
  }
  const creds: KubeCredentials = {
    server: server.replace(/\/+$/, ''),
    source: all,
    context: contextName,
  };
  const ca = fileReader(clusterFile).dataOrFile(cluster, 'certificate-authority', owner);
  if (ca) creds.ca = ca;
  if (cluster['insecure-skip-tls-verify'] === true) creds.insecureSkipTlsVerify = true;
  const sni = str(cluster, 'tls-server-name');
  if (sni) creds.tlsServerName = sni;

  const userName = str(context, 'user');
  if (!userName) return creds; // anonymous: allowed, the server decides
  const { body: user, file: userFile } = find('user', userName, contextFile);
  const uOwner = `user "${userName}"`;
  const u = fileReader(userFile);
  for (const unsupported of ['auth-provider', 'username']) {
    if (user[unsupported] !== undefined) {
      throw new KubeconfigError(
        `${userFile}: ${uOwner}: "${unsupported}" credentials are not supported; use a client certificate, a token or an exec plugin`,
      );
    }
  }
  const cert = u.dataOrFile(user, 'client-certificate', uOwner);
  const key = u.dataOrFile(user, 'client-key', uOwner);
  if (cert && !key)
    throw new KubeconfigError(
      `${userFile}: ${uOwner} has a client certificate but no "client-key"`,
    );
  if (key && !cert)
    throw new KubeconfigError(
      `${userFile}: ${uOwner} has a client key but no "client-certificate"`,
    );
  if (cert && key) Object.assign(creds, { cert, key });
  const token = str(user, 'token');
  const tokenFile = str(user, 'tokenFile');
  if (token) creds.auth = staticToken(token);
  else if (tokenFile)
    creds.auth = tokenFileSource(
      fileToken(u.at(tokenFile), { readFile: read, refreshMs: opts.tokenRefreshMs }),
    );
  // client-go skips the plugin when the kubeconfig already names a token or certificate.
  if (user.exec !== undefined && !creds.cert && !creds.auth) {
    const exec = parseExecConfig(user.exec, `${userFile}: ${uOwner}`, dirname(userFile));
    creds.auth = execCredentialSource(exec, execClusterInfo(creds, cluster));
  }
  if (!creds.cert && !creds.auth) {
    throw new KubeconfigError(
      `${userFile}: ${uOwner} has no credentials: set "client-certificate(-data)" + "client-key(-data)", "token", "tokenFile" or "exec"`,
    );
  }
  return creds;
}

/** spec.cluster for plugins with provideClusterInfo, in client-go's field names. */
function execClusterInfo(creds: KubeCredentials, cluster: Obj): ExecClusterInfo {
  const info: ExecClusterInfo = { server: creds.server };
  if (creds.tlsServerName) info['tls-server-name'] = creds.tlsServerName;
  if (creds.insecureSkipTlsVerify) info['insecure-skip-tls-verify'] = true;
  if (creds.ca) info['certificate-authority-data'] = creds.ca.toString('base64');
  const proxy = str(cluster, 'proxy-url');
  if (proxy) info['proxy-url'] = proxy;
  if (cluster['disable-compression'] === true) info['disable-compression'] = true;
  const ext = Array.isArray(cluster.extensions)
    ? (cluster.extensions as unknown[]).find(
        (e) => isObj(e) && e.name === 'client.authentication.k8s.io/exec',
      )
    : undefined;
  if (isObj(ext) && ext.extension !== undefined) info.config = ext.extension;
  return info;
}

/** One kubeconfig text → the credentials of its current context (or `opts.context`). */
export function parseKubeconfig(
  text: string,
  file: string,
  opts: SelectOptions = {},
): KubeCredentials {
  return credentialsFor(mergeKubeconfigs([{ file, text }]), opts);
}

function readText(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (e) {
    throw new KubeconfigError(
      `cannot read kubeconfig "${file}" (${(e as NodeJS.ErrnoException).code ?? e})`,
    );
  }
}

/** One file that must exist (--kubeconfig, kube.kubeconfig). */
export function loadKubeconfig(file: string, opts: SelectOptions = {}): KubeCredentials {
  return parseKubeconfig(readText(file), file, opts);
}

/**
 * A $KUBECONFIG list: empty and repeated entries dropped, missing files skipped (as
 * kubectl does), an error when none exists.
 */
export function loadKubeconfigList(list: string, opts: SelectOptions = {}): KubeCredentials {
  const paths = [...new Set(list.split(delimiter).filter((p) => p !== ''))];
  const docs = paths.filter((p) => existsSync(p)).map((file) => ({ file, text: readText(file) }));
  if (docs.length === 0) {
    throw new KubeconfigError(`none of the files in $KUBECONFIG exists: ${paths.join(delimiter)}`);
  }
  return credentialsFor(mergeKubeconfigs(docs), opts);
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
    auth: tokenFileSource(
      fileToken(`${dir}/token`, { readFile: read, refreshMs: opts.tokenRefreshMs }),
    ),
    source: 'in-cluster',
  };
}

export interface ResolveOptions extends SelectOptions {
  /** An explicit kubeconfig (--kubeconfig / kube.kubeconfig): beats $KUBECONFIG. */
  kubeconfig?: string | undefined;
  env?: NodeJS.ProcessEnv;
  /** Fall back to ~/.kube/config (kubectl does; `annex serve` does not). */
  defaultFile?: boolean;
  serviceAccountDir?: string;
}

/**
 * kubectl's lookup: an explicit file, else $KUBECONFIG, else ~/.kube/config when it
 * exists, else the Pod's ServiceAccount (client-go's "possible": both service env vars
 * and a token file). Null when there is none of them.
 */
export function resolveCredentials(opts: ResolveOptions = {}): KubeCredentials | null {
  const env = opts.env ?? process.env;
  if (opts.kubeconfig) return loadKubeconfig(opts.kubeconfig, opts);
  if (env.KUBECONFIG?.split(delimiter).some((p) => p !== ''))
    return loadKubeconfigList(env.KUBECONFIG, opts);
  if (opts.defaultFile !== false) {
    const home = join(env.HOME ?? homedir(), '.kube', 'config');
    if (existsSync(home)) return loadKubeconfig(home, opts);
  }
  const dir = opts.serviceAccountDir ?? SERVICE_ACCOUNT_DIR;
  if (env.KUBERNETES_SERVICE_HOST && env.KUBERNETES_SERVICE_PORT && isFile(`${dir}/token`)) {
    if (opts.context) {
      throw new KubeconfigError(
        `context "${opts.context}": no kubeconfig to find it in (running in a cluster; set --kubeconfig or $KUBECONFIG)`,
      );
    }
    return inCluster({ env, dir, ...(opts.readFile ? { readFile: opts.readFile } : {}) });
  }
  return null;
}

function isFile(p: string): boolean {
  try {
    return statSync(p).isFile();
  } catch {
    return false;
  }
}

/** resolveCredentials(), or an error saying where annex looked. */
export function defaultCredentials(opts: ResolveOptions = {}): KubeCredentials {
  const creds = resolveCredentials(opts);
  if (creds) return creds;
  throw new KubeconfigError(
    'no cluster to talk to: pass --kubeconfig, set $KUBECONFIG, create ~/.kube/config, or run in a Pod',
  );
}
