// What `annex install` applies: the kustomize base in manifests/, read as `kubectl
// kustomize` renders it (the subset the base uses: file resources, one configMapGenerator
// with kustomize's own name hash, `labels` without selectors), so `kubectl apply -k
// manifests/` and `annex install` create the same objects. A test compares the two.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse, parseAllDocuments, parseDocument } from 'yaml';
import { UserError } from '../errors.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Obj = Record<string, any>;

export const DEFAULT_NAMESPACE = 'annex-system';
export const NAME_LABEL = 'app.kubernetes.io/name=annex';

/** As the config loader reads YAML: oddities that do not stop the parse are no Node warning on stderr. */
const QUIET = { logLevel: 'error' } as const;

/** manifests/ of this package: two levels up from src/install/ and dist/install/ alike. */
export const MANIFESTS_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'manifests');

interface Kustomization {
  resources?: string[];
  configMapGenerator?: { name: string; namespace?: string; files: string[] }[];
  labels?: { pairs: Record<string, string>; includeSelectors?: boolean }[];
}

export interface BundleOptions {
  dir?: string;
  /** Moves every annex-system object (and the config's tls.namespace) here. */
  namespace?: string;
  /** The annex container's image. */
  image?: string;
}

export function renderBundle(opts: BundleOptions = {}): Obj[] {
  const dir = opts.dir ?? MANIFESTS_DIR;
  const k = parse(readFileSync(join(dir, 'kustomization.yaml'), 'utf8'), QUIET) as Kustomization;
  const ns = opts.namespace ?? DEFAULT_NAMESPACE;
  const objs: Obj[] = [];
  for (const r of k.resources ?? []) {
    if (!/\.ya?ml$/.test(r))
      throw new Error(`kustomization resource ${r}: only files are supported`);
    for (const d of parseAllDocuments(readFileSync(join(dir, r), 'utf8'), QUIET)) {
      const o = d.toJSON() as Obj | null;
      if (o) objs.push(o);
    }
  }
  const renamed = new Map<string, string>();
  for (const g of k.configMapGenerator ?? []) {
    const data: Record<string, string> = {};
    for (const f of g.files) {
      const [key, path] = f.includes('=') ? f.split('=', 2) : [f, f];
      let text = readFileSync(join(dir, path!), 'utf8');
      if (ns !== DEFAULT_NAMESPACE && key === 'annex.yaml') text = configInNamespace(text, ns);
      data[key!] = text;
    }
    const name = `${g.name}-${configMapHash(data)}`;
    renamed.set(g.name, name);
    // Before the Deployment that mounts it, so its first Pod finds it.
    const at = objs.findIndex((o) => o.kind === 'Deployment');
    objs.splice(at < 0 ? objs.length : at, 0, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name, ...(g.namespace ? { namespace: g.namespace } : {}) },
      data,
    });
  }
  const labels = Object.assign({}, ...(k.labels ?? []).map((l) => l.pairs)) as Record<
    string,
    string
  >;
  for (const o of objs) {
    o.metadata.labels = { ...o.metadata.labels, ...labels };
    if (o.kind === 'Deployment') {
      for (const v of o.spec.template.spec.volumes ?? [])
        if (v.configMap && renamed.has(v.configMap.name))
          v.configMap.name = renamed.get(v.configMap.name);
      if (opts.image)
        for (const c of o.spec.template.spec.containers)
          if (c.name === 'annex') c.image = opts.image;
    }
    if (ns !== DEFAULT_NAMESPACE) moveNamespace(o, ns);
  }
  return objs;
}

function moveNamespace(o: Obj, ns: string): void {
  if (o.kind === 'Namespace' && o.metadata.name === DEFAULT_NAMESPACE) o.metadata.name = ns;
  if (o.metadata.namespace === DEFAULT_NAMESPACE) o.metadata.namespace = ns;
  for (const s of o.subjects ?? []) if (s.namespace === DEFAULT_NAMESPACE) s.namespace = ns;
  if (o.spec?.service?.namespace === DEFAULT_NAMESPACE) o.spec.service.namespace = ns;
}

/** The config file with tls.namespace set (the certificate's SAN and the registered Service). */
function configInNamespace(text: string, ns: string): string {
  const doc = parseDocument(text, QUIET);
  doc.setIn(['tls', 'namespace'], ns);
  doc.setIn(['metrics', 'localNamespace'], ns);
  return doc.toString();
}

/**
 * kustomize's ConfigMap name suffix (api/hasher): sha256 of the Go JSON encoding of
 * {data, kind, name} (keys sorted, HTML characters escaped), first 10 hex digits with
 * 0,1,3,a,e replaced so the suffix never reads as a number or a word. The kustomize in
 * kubectl 1.37 hashes before it sets the name, so name is "" (checked against `kubectl
 * kustomize` by test/e2e/manifests.test.ts).
 */
export function configMapHash(data: Record<string, string>, name = ''): string {
  const sorted = Object.fromEntries(Object.entries(data).sort(([a], [b]) => (a < b ? -1 : 1)));
  const json = JSON.stringify({ data: sorted, kind: 'ConfigMap', name }).replace(
    /[<>&\u2028\u2029]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
  const hex = createHash('sha256').update(json).digest('hex').slice(0, 10);
  const swap: Record<string, string> = { '0': 'g', '1': 'h', '3': 'k', a: 'm', e: 't' };
  return [...hex].map((c) => swap[c] ?? c).join('');
}

/** A user's namespace must be a DNS-1123 label. */
export function checkNamespace(ns: string): string {
  if (!/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(ns))
    throw new UserError(
      `--namespace ${JSON.stringify(ns)} is not a valid namespace name (a DNS-1123 label)`,
    );
  return ns;
}
