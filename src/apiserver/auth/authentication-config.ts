// The trust material kube-apiserver publishes for extension servers, in
// kube-system/extension-apiserver-authentication, read once at start and then kept
// current with a watch (CA rotation is picked up without a restart, as k8s.io/apiserver's
// DynamicCAFromConfigMapController does).
import type { X509Certificate } from 'node:crypto';
import type { KubeClient } from '../../kube/client.js';
import { KubeApiError } from '../../kube/errors.js';
import type { Logger } from '../../log.js';
import { parsePemBundle } from './x509.js';

export const AUTH_CONFIGMAP_NAMESPACE = 'kube-system';
export const AUTH_CONFIGMAP_NAME = 'extension-apiserver-authentication';

export interface CaBundle {
  pem: string;
  certs: X509Certificate[];
}

export interface RequestHeaderConfig {
  ca: CaBundle;
  /** CNs allowed to assert identities; empty = any CN the CA signed. */
  allowedNames: string[];
  usernameHeaders: string[];
  uidHeaders: string[];
  groupHeaders: string[];
  extraHeaderPrefixes: string[];
}

export interface AuthenticationConfig {
  /** Signs direct callers' client certificates (user = CN, groups = O). */
  clientCA?: CaBundle;
  /** Front-proxy trust; absent when the cluster has no requestheader CA. */
  requestHeader?: RequestHeaderConfig;
}

function bundle(pem: string | undefined, key: string): CaBundle | undefined {
  if (!pem?.trim()) return undefined;
  let certs: X509Certificate[];
  try {
    certs = parsePemBundle(pem);
  } catch (e) {
    throw new Error(
      `${AUTH_CONFIGMAP_NAME}: "${key}" holds a certificate that cannot be parsed (${(e as Error).message})`,
    );
  }
  if (certs.length === 0)
    throw new Error(`${AUTH_CONFIGMAP_NAME}: "${key}" holds no PEM certificate`);
  return { pem, certs };
}

function stringArray(data: Record<string, string>, key: string): string[] {
  const raw = data[key];
  if (raw === undefined || raw === '') return [];
  let v: unknown;
  try {
    v = JSON.parse(raw);
  } catch {
    throw new Error(`${AUTH_CONFIGMAP_NAME}: "${key}" is not a JSON array`);
  }
  if (!Array.isArray(v) || !v.every((s) => typeof s === 'string')) {
    throw new Error(`${AUTH_CONFIGMAP_NAME}: "${key}" is not a JSON array of strings`);
  }
  return v.filter((s) => s !== '');
}

/** The configmap's data → typed config. Throws on malformed content (never half-applies). */
export function parseAuthenticationConfig(data: Record<string, string>): AuthenticationConfig {
  const config: AuthenticationConfig = {};
  const clientCA = bundle(data['client-ca-file'], 'client-ca-file');
  if (clientCA) config.clientCA = clientCA;
  const rhCA = bundle(data['requestheader-client-ca-file'], 'requestheader-client-ca-file');
  if (rhCA) {
    config.requestHeader = {
      ca: rhCA,
      allowedNames: stringArray(data, 'requestheader-allowed-names'),
      usernameHeaders: stringArray(data, 'requestheader-username-headers'),
      uidHeaders: stringArray(data, 'requestheader-uid-headers'),
      groupHeaders: stringArray(data, 'requestheader-group-headers'),
      extraHeaderPrefixes: stringArray(data, 'requestheader-extra-headers-prefix'),
    };
  }
  return config;
}

interface ConfigMap {
  metadata?: { name?: string; resourceVersion?: string };
  data?: Record<string, string>;
}

const PATH = `/api/v1/namespaces/${AUTH_CONFIGMAP_NAMESPACE}/configmaps`;

export class AuthenticationConfigSource {
  private config: AuthenticationConfig = {};
  private fingerprint = '';
  private listeners = new Set<(c: AuthenticationConfig) => void>();
  private stopWatch?: () => void;

  constructor(
    private readonly client: KubeClient,
    private readonly log: Logger,
  ) {}

  /** Reads the configmap (rejecting with a clear reason if it cannot), then watches it. */
  async start(): Promise<void> {
    let cm: ConfigMap;
    try {
      cm = await this.client.get<ConfigMap>(`${PATH}/${AUTH_CONFIGMAP_NAME}`);
    } catch (e) {
      const hint =
        e instanceof KubeApiError && e.code === 403
          ? ` (bind the Role ${AUTH_CONFIGMAP_NAMESPACE}/extension-apiserver-authentication-reader to annex's identity)`
          : '';
      throw new Error(
        `cannot read ${AUTH_CONFIGMAP_NAMESPACE}/${AUTH_CONFIGMAP_NAME}: ${(e as Error).message}${hint}`,
        { cause: e },
      );
    }
    this.apply(cm, true);
    this.stopWatch = this.client.watch<ConfigMap>(
      PATH,
      {
        ...(cm.metadata?.resourceVersion ? { resourceVersion: cm.metadata.resourceVersion } : {}),
        query: { fieldSelector: `metadata.name=${AUTH_CONFIGMAP_NAME}` },
      },
      (ev) => {
        if (ev.type === 'ADDED' || ev.type === 'MODIFIED') this.apply(ev.object, false);
        else if (ev.type === 'RELISTED' && ev.items[0]) this.apply(ev.items[0], false);
        else if (ev.type === 'DELETED' || ev.type === 'RELISTED') {
          this.log.warn(
            { configmap: AUTH_CONFIGMAP_NAME },
            'authentication configmap gone; keeping the last one',
          );
        }
      },
      (err) =>
        this.log.warn(
          { configmap: AUTH_CONFIGMAP_NAME, error: err.message },
          'authentication configmap watch failed; retrying',
        ),
    );
  }

  stop(): void {
    this.stopWatch?.();
    this.stopWatch = undefined;
  }

  current(): AuthenticationConfig {
    return this.config;
  }

  /** PEMs the TLS listener should name in its CertificateRequest (TlsMaterial.clientCAs). */
  clientCAs(): string[] {
    return [this.config.requestHeader?.ca.pem, this.config.clientCA?.pem].filter(
      (p): p is string => !!p,
    );
  }

  /** Called after every change of content (not on the first read). Returns an unsubscribe. */
  onChange(cb: (c: AuthenticationConfig) => void): () => void {
    this.listeners.add(cb);
    return () => this.listeners.delete(cb);
  }

  /** Replaces the config from data directly (tests, or a file-based source). */
  setData(data: Record<string, string>): void {
    this.apply({ data }, false);
  }

  private apply(cm: ConfigMap, first: boolean): void {
    const data = cm.data ?? {};
    const fp = JSON.stringify(Object.entries(data).sort(([a], [b]) => (a < b ? -1 : 1)));
    if (fp === this.fingerprint) return;
    let next: AuthenticationConfig;
    try {
      next = parseAuthenticationConfig(data);
    } catch (e) {
      if (first) throw e;
      this.log.error(
        { configmap: AUTH_CONFIGMAP_NAME, error: (e as Error).message },
        'ignored an invalid authentication configmap; keeping the previous one',
      );
      return;
    }
    this.config = next;
    this.fingerprint = fp;
    this.log.info(
      {
        configmap: AUTH_CONFIGMAP_NAME,
        clientCA: !!next.clientCA,
        requestHeaderCA: !!next.requestHeader,
        allowedNames: next.requestHeader?.allowedNames.length ?? 0,
      },
      first ? 'loaded authentication configuration' : 'authentication configuration changed',
    );
    if (first) return;
    for (const cb of this.listeners) {
      try {
        cb(next);
      } catch (e) {
        this.log.error({ error: (e as Error).message }, 'authentication config listener failed');
      }
    }
  }
}
