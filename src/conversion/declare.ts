// A CRD conversion is one declaration: the CRD's group, kind and versions, and for every
// version but the hub a pair of functions to and from the hub (controller-runtime's
// Hub / Convertible). The same value is served at /convert/<name> (./server.ts) and
// rendered into the CRD's spec.conversion (src/manifests/render.ts), so the two cannot
// drift. A declaration may also own the whole CRD (`crd`): then `annex manifests`
// renders the CRD itself, schemas and all, with its conversion.
import type { JsonSchema, KubeObject } from '../core/types.js';

/**
 * One version's way to and from the hub. Both get their own copy of the object and return
 * the converted one (apiVersion is set by annex); metadata must come back unchanged but for
 * labels and annotations, which is where a field the other version lacks can be kept.
 */
export interface Convertible<
  Spoke extends KubeObject = KubeObject,
  Hub extends KubeObject = KubeObject,
> {
  /** This version → the hub (controller-runtime's ConvertTo). */
  toHub(object: Spoke): Hub | Promise<Hub>;
  /** The hub → this version (ConvertFrom). */
  fromHub(object: Hub): Spoke | Promise<Spoke>;
}

/** One entry of the CRD's spec.versions, as apiextensions.k8s.io/v1 writes it. */
export interface CrdVersion {
  name: string;
  /** Default true. */
  served?: boolean;
  /** Exactly one version is the storage version. */
  storage: boolean;
  schema: { openAPIV3Schema: JsonSchema };
  subresources?: { status?: Record<string, never>; scale?: Record<string, unknown> };
  additionalPrinterColumns?: Record<string, unknown>[];
  deprecated?: boolean;
  deprecationWarning?: string;
}

/** The rest of a CRD this declaration owns: its versions (with schemas), scope and names. */
export interface CrdSpec {
  scope?: 'Namespaced' | 'Cluster';
  versions: CrdVersion[];
  /** Default: the kind in lower case. */
  singular?: string;
  shortNames?: string[];
  categories?: string[];
}

export interface ConversionInit {
  group: string;
  kind: string;
  plural: string;
  /** The version every other converts through (often the newest, or the storage version). */
  hub: string;
  /** Every version but the hub, with its converter. */
  versions: Record<string, Convertible>;
  /** Give the CRD's spec to own the CRD: `annex manifests` then renders all of it. */
  crd?: CrdSpec;
  /** Rendered as the comment above the CRD. */
  description?: string;
  /** Served at /convert/<name>; default the CRD's name, `<plural>.<group>`. */
  name?: string;
}

export interface Conversion {
  /** URL segment: served at /convert/<name>. */
  name: string;
  /** The CRD's metadata.name: `<plural>.<group>`. */
  crdName: string;
  group: string;
  kind: string;
  plural: string;
  hub: string;
  converters: Readonly<Record<string, Convertible>>;
  crd?: CrdSpec;
  description?: string;
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const VERSION = /^v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?$/;

/** A CRD conversion webhook through a hub version: `crdConversion({ group, kind, plural, hub, versions })`. */
export function crdConversion(init: ConversionInit): Conversion {
  const { group, kind, plural, hub, versions, crd, description } = init;
  const crdName = `${plural}.${group}`;
  const where = `conversion for ${JSON.stringify(crdName)}`;
  if (!group.includes('.') || !group.split('.').every((l) => DNS_LABEL.test(l)))
    throw new TypeError(`${where}: group must be a DNS subdomain with a dot (e.g. "example.com")`);
  if (!DNS_LABEL.test(plural))
    throw new TypeError(`${where}: plural must be a lower-case DNS label`);
  if (!/^[A-Z][A-Za-z0-9]*$/.test(kind)) throw new TypeError(`${where}: kind must be CamelCase`);
  for (const v of [hub, ...Object.keys(versions)]) {
    if (!VERSION.test(v))
      throw new TypeError(`${where}: ${JSON.stringify(v)} is not a Kubernetes version name`);
  }
  if (Object.hasOwn(versions, hub))
    throw new TypeError(`${where}: the hub ${hub} needs no converter`);
  for (const [v, c] of Object.entries(versions)) {
    if (typeof c?.toHub !== 'function' || typeof c.fromHub !== 'function')
      throw new TypeError(`${where}: version ${v} needs toHub and fromHub functions`);
  }
  if (crd) {
    const names = crd.versions.map((v) => v.name);
    const unconvertible = names.filter((v) => v !== hub && !Object.hasOwn(versions, v));
    if (unconvertible.length)
      throw new TypeError(
        `${where}: the CRD's version ${unconvertible.join(', ')} has no converter`,
      );
    if (crd.versions.filter((v) => v.storage).length !== 1)
      throw new TypeError(
        `${where}: exactly one of the CRD's versions must be the storage version`,
      );
  }
  const name = init.name ?? crdName;
  if (!name.split('.').every((l) => DNS_LABEL.test(l)))
    throw new TypeError(`${where}: name must be a DNS subdomain (it is a URL segment)`);
  return {
    name,
    crdName,
    group,
    kind,
    plural,
    hub,
    converters: { ...versions },
    ...(crd ? { crd } : {}),
    ...(description ? { description } : {}),
  };
}

export const conversionPath = (c: Pick<Conversion, 'name'>): string => `/convert/${c.name}`;
