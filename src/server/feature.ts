// The one contract every capability of annex is built on, the built-in ones included.
// A feature declares what it serves (admission webhooks, CRD conversions, aggregated API
// groups), how it
// starts and stops, and when it is ready; the server mounts, registers and probes it.
import type { Webhook } from '../admission/webhook.js';
import type { GroupVersionDecl } from '../apiserver/types.js';
import type { Conversion } from '../conversion/declare.js';
import type { KubeClient } from '../kube/client.js';
import type { Logger } from '../log.js';

export interface FeatureContext {
  /** The API server annex extends; null when annex runs without one (local demo). */
  kube: KubeClient | null;
  /** A child logger named after the feature. */
  log: Logger;
}

export interface Feature {
  /** Short, unique: used in logs and in /readyz's check names. */
  name: string;
  webhooks?: Webhook[];
  /** CRD conversion webhooks (ConversionReview), served at /convert/<name>. */
  conversions?: Conversion[];
  groups?: GroupVersionDecl[];
  /**
   * JSON the other replicas of annex read (GET /peers/<feature>/<name>), e.g. to merge
   * what each replica holds in memory. Outside the API server's authentication: the server
   * admits only a client certificate issued by annex's own CA (the replicas' shared one).
   */
  peer?: Record<string, () => unknown>;
  /** Called once before the server listens; a throw stops annex with that message. */
  start?(ctx: FeatureContext): void | Promise<void>;
  stop?(): void | Promise<void>;
  /** true when the feature can do its job, else why not (shown by /readyz?verbose). */
  ready?(): true | string;
}

/** Identity, for type inference in user modules: `export default defineFeature({...})`. */
export const defineFeature = <F extends Feature>(feature: F): F => feature;

/** Checks what the server relies on: unique names, webhook and conversion paths, groups and CRDs. */
export function validateFeatures(features: readonly Feature[]): void {
  const names = new Set<string>();
  const paths = new Map<string, string>();
  const groups = new Map<string, string>();
  for (const f of features) {
    if (typeof f?.name !== 'string' || f.name === '') {
      throw new TypeError('every feature needs a non-empty name');
    }
    if (names.has(f.name)) throw new TypeError(`two features are named "${f.name}"`);
    names.add(f.name);
    for (const w of f.webhooks ?? []) {
      const path = `${w.type}/${w.name}`;
      const other = paths.get(path);
      if (other)
        throw new TypeError(`features "${other}" and "${f.name}" both serve webhook ${path}`);
      paths.set(path, f.name);
    }
    for (const c of f.conversions ?? []) {
      for (const [key, what] of [
        [`convert/${c.name}`, `conversion path /convert/${c.name}`],
        [`crd/${c.crdName}`, `the conversion of CRD ${c.crdName}`],
      ] as const) {
        const other = paths.get(key);
        if (other) throw new TypeError(`features "${other}" and "${f.name}" both serve ${what}`);
        paths.set(key, f.name);
      }
    }
    for (const g of f.groups ?? []) {
      const other = groups.get(g.group);
      if (other)
        throw new TypeError(`features "${other}" and "${f.name}" both serve group ${g.group}`);
      groups.set(g.group, f.name);
    }
  }
}
