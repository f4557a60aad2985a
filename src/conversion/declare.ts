// A CRD conversion is one declaration: the CRD's group, kind and versions, and for every
// version but the hub a pair of functions to and from the hub (controller-runtime's
// Hub / Convertible). The same value is served at /convert/<name> (./server.ts) and
// rendered into the CRD's spec.conversion (src/manifests/render.ts), so the two cannot
// drift. A declaration may also own the whole CRD (`crd`): then `annex manifests`
// renders the CRD itself, schemas and all, with its conversion.
import type { Conversion, Convertible, CrdSpec } from '../core/conversion.js';

// The declaration's types are the contract's (src/core/conversion.ts); here for their importers.
export type { Conversion, Convertible, CrdSpec, CrdVersion } from '../core/conversion.js';

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
