// Accept-header negotiation in the manner of k8s.io/apiserver's negotiation package:
// annex only writes JSON, but a media type may ask for a conversion (`as=Table;g=meta.k8s.io;v=v1`,
// `as=APIGroupDiscoveryList;g=apidiscovery.k8s.io;v=v2`) that an endpoint does or does not
// offer. Clients list what they take in preference order; `*/*` and a missing header mean
// plain JSON; if nothing listed is producible the answer is 406.
import { notAcceptable } from '../core/status.js';

export interface Conversion {
  /** `as`: the kind to convert to. */
  kind: string;
  group: string;
  version: string;
}

interface MediaRange {
  type: string;
  subtype: string;
  params: Record<string, string>;
  q: number;
  index: number;
}

export function parseAccept(header: string | undefined): MediaRange[] {
  if (!header || header.trim() === '') return [];
  const out: MediaRange[] = [];
  header.split(',').forEach((part, index) => {
    const [mt, ...rawParams] = part.split(';').map((s) => s.trim());
    if (!mt) return;
    const [type = '', subtype = ''] = mt.toLowerCase().split('/');
    const params: Record<string, string> = {};
    let q = 1;
    for (const p of rawParams) {
      const eq = p.indexOf('=');
      if (eq < 0) continue;
      const k = p.slice(0, eq).trim().toLowerCase();
      const v = p
        .slice(eq + 1)
        .trim()
        .replace(/^"(.*)"$/, '$1');
      if (k === 'q') q = Number.isFinite(Number(v)) ? Number(v) : 0;
      else params[k] = v;
    }
    if (q > 0) out.push({ type, subtype, params, q, index });
  });
  // Highest q first; equal q keeps the client's order.
  return out.sort((a, b) => b.q - a.q || a.index - b.index);
}

export const JSON_MEDIA_TYPE = 'application/json';

/**
 * The first acceptable choice: `undefined` for plain JSON, or one of `conversions` the
 * client asked for. Throws 406 NotAcceptable when nothing listed can be produced.
 */
export function negotiate(
  header: string | undefined,
  conversions: readonly Conversion[] = [],
): Conversion | undefined {
  const ranges = parseAccept(header);
  if (ranges.length === 0) return undefined;
  for (const r of ranges) {
    const jsonish =
      (r.type === 'application' && (r.subtype === 'json' || r.subtype === '*')) ||
      (r.type === '*' && r.subtype === '*');
    if (!jsonish) continue;
    const as = r.params.as;
    if (as === undefined) return undefined;
    const hit = conversions.find(
      (c) => c.kind === as && c.group === (r.params.g ?? '') && c.version === (r.params.v ?? ''),
    );
    if (hit) return hit;
  }
  throw notAcceptable([JSON_MEDIA_TYPE]);
}

/** `application/json;g=...;v=...;as=...`: the Content-Type of a converted response. */
export function contentTypeOf(c: Conversion | undefined): string {
  if (!c) return JSON_MEDIA_TYPE;
  if (c.kind === 'Table') return `application/json;as=Table;v=${c.version};g=${c.group}`;
  return `application/json;g=${c.group};v=${c.version};as=${c.kind}`;
}

export const TABLE_CONVERSIONS: readonly Conversion[] = [
  { kind: 'Table', group: 'meta.k8s.io', version: 'v1' },
  { kind: 'Table', group: 'meta.k8s.io', version: 'v1beta1' },
];

export const DISCOVERY_CONVERSIONS: readonly Conversion[] = [
  { kind: 'APIGroupDiscoveryList', group: 'apidiscovery.k8s.io', version: 'v2' },
  { kind: 'APIGroupDiscoveryList', group: 'apidiscovery.k8s.io', version: 'v2beta1' },
];
