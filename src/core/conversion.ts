// The conversion half of the Feature contract: what a CRD conversion declares. Declaring one
// (crdConversion) and serving it live in src/conversion/, which builds on these.
import type { JsonSchema, KubeObject } from './types.js';

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
