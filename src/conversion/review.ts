// The ConversionReview contract (apiextensions.k8s.io/v1): parse what the API server
// sends (a malformed envelope is a 400 Status), convert every object through the hub, and
// answer with the request's uid and the objects in order, each in the desired apiVersion,
// its metadata untouched but for labels and annotations. Any failure to convert is a
// `Failed` result with a message, as the API server expects: never a crash.
import { badRequest } from '../core/status.js';
import type { KubeObject } from '../core/types.js';
import { isObject, nestsDeeperThan, type JsonObject } from '../json.js';
import { errorFields, logField } from '../log.js';
import type { Conversion } from './declare.js';

export const REVIEW_VERSION = 'apiextensions.k8s.io/v1';

export interface ConversionRequest {
  uid: string;
  desiredAPIVersion: string;
  objects: unknown[];
}

export interface ConversionResponse {
  uid: string;
  convertedObjects: KubeObject[];
  /**
   * metav1.Status: the API server reads only status and message. "Failed" is what the
   * Kubernetes documentation writes for a failure; anything but "Success" fails.
   */
  result: { status: 'Success' } | { status: 'Failed'; message: string };
}

/** How deeply an object may nest: as for AdmissionReviews (src/admission/review.ts). */
const MAX_OBJECT_DEPTH = 1000;

/** A wrong envelope value in a message: a string quoted and bounded, anything else by type. */
const shown = (v: unknown) =>
  typeof v === 'string' ? JSON.stringify(logField(v, 64)) : logField(v ?? null);

export function parseConversionReview(body: unknown): ConversionRequest {
  if (!isObject(body)) throw badRequest('the request body must be a JSON ConversionReview object');
  const { apiVersion, kind, request } = body;
  if (kind !== 'ConversionReview')
    throw badRequest(`expected kind "ConversionReview", got ${shown(kind)}`);
  if (apiVersion !== REVIEW_VERSION)
    throw badRequest(
      `unsupported ConversionReview apiVersion ${shown(apiVersion)}: expected ${REVIEW_VERSION}`,
    );
  if (!isObject(request)) throw badRequest('ConversionReview has no request');
  if (typeof request.uid !== 'string' || request.uid === '')
    throw badRequest('ConversionReview request.uid is missing');
  if (typeof request.desiredAPIVersion !== 'string' || !request.desiredAPIVersion.includes('/'))
    throw badRequest('ConversionReview request.desiredAPIVersion must be "<group>/<version>"');
  if (!Array.isArray(request.objects))
    throw badRequest('ConversionReview request.objects must be a list');
  return request as unknown as ConversionRequest;
}

export const conversionReviewResponse = (response: ConversionResponse) => ({
  apiVersion: REVIEW_VERSION,
  kind: 'ConversionReview',
  response,
});

/** Why one object could not be converted; the message holds identifiers only, never values. */
export class ConversionFailure extends Error {}

const versionOf = (apiVersion: string, group: string): string | undefined => {
  const slash = apiVersion.indexOf('/');
  return slash > 0 && apiVersion.slice(0, slash) === group
    ? apiVersion.slice(slash + 1)
    : undefined;
};

/**
 * Converts every object to the desired version through the hub. The first object that
 * fails stops the review: the API server takes all or nothing.
 */
export async function convertAll(c: Conversion, request: ConversionRequest): Promise<KubeObject[]> {
  const to = versionOf(request.desiredAPIVersion, c.group);
  if (!to || !known(c, to))
    throw new ConversionFailure(
      `cannot convert to ${shown(request.desiredAPIVersion)}: not a version of ${c.crdName} (${[c.hub, ...Object.keys(c.converters)].join(', ')})`,
    );
  const out: KubeObject[] = [];
  for (const [i, o] of request.objects.entries()) out.push(await convertOne(c, o, i, to));
  return out;
}

const known = (c: Conversion, v: string) => v === c.hub || Object.hasOwn(c.converters, v);

async function convertOne(c: Conversion, o: unknown, i: number, to: string): Promise<KubeObject> {
  const at = `object ${i}`;
  if (!isObject(o) || !isObject(o.metadata))
    throw new ConversionFailure(`${at} is not an object with metadata`);
  const id = `${at} (${identify(o.metadata)})`;
  if (o.kind !== c.kind)
    throw new ConversionFailure(`${id} is of kind ${shown(o.kind)}, not ${c.kind}`);
  const from = typeof o.apiVersion === 'string' ? versionOf(o.apiVersion, c.group) : undefined;
  if (!from || !known(c, from))
    throw new ConversionFailure(
      `${id} has apiVersion ${shown(o.apiVersion)}, not a version of ${c.crdName}`,
    );
  if (nestsDeeperThan(o, MAX_OBJECT_DEPTH))
    throw new ConversionFailure(`${id} is nested more than ${MAX_OBJECT_DEPTH} levels deep`);
  const original = o as KubeObject;
  let converted: unknown = original;
  if (from !== to) {
    const step = `${id} from ${from} to ${to}`;
    try {
      // Each converter gets its own copy: the original is what metadata is checked against.
      let hub = structuredClone(original);
      if (from !== c.hub) hub = await c.converters[from]!.toHub(hub);
      if (!isObject(hub)) throw new ConversionFailure(`${step}: ${from}.toHub returned no object`);
      converted = to === c.hub ? hub : await c.converters[to]!.fromHub(hub);
    } catch (e) {
      if (e instanceof ConversionFailure) throw e;
      // The class only: a converter's message may quote the object.
      throw new ConversionFailure(`${step} failed: ${errorFields(e).error}`, { cause: e });
    }
    if (!isObject(converted))
      throw new ConversionFailure(`${step}: ${to}.fromHub returned no object`);
    checkMetadata(original.metadata, converted.metadata, step);
  }
  return { ...(converted as KubeObject), apiVersion: `${c.group}/${to}`, kind: c.kind };
}

function identify(meta: JsonObject): string {
  const name = logField(typeof meta.name === 'string' ? meta.name : '', 253);
  const ns = typeof meta.namespace === 'string' ? `${logField(meta.namespace, 63)}/` : '';
  return `${ns}${name}`;
}

/**
 * The API server's rule for a conversion webhook's answer: metadata may differ only in
 * labels and annotations (it silently restores the rest). annex says so instead, so
 * that a converter that loses, say, a finalizer is found at once, not in production.
 */
function checkMetadata(before: JsonObject, after: unknown, step: string): void {
  if (!isObject(after)) throw new ConversionFailure(`${step} dropped metadata`);
  for (const key of new Set([...Object.keys(before), ...Object.keys(after)])) {
    if (key === 'labels' || key === 'annotations') {
      if (after[key] !== undefined && !isStringMap(after[key]))
        throw new ConversionFailure(`${step}: metadata.${key} must map strings to strings`);
    } else if (!sameJson(before[key], after[key])) {
      throw new ConversionFailure(
        `${step} changed metadata.${logField(key, 64)}: a conversion may change only labels and annotations`,
      );
    }
  }
}

const isStringMap = (v: unknown) =>
  isObject(v) && Object.values(v).every((s) => typeof s === 'string');

/** Equality of two JSON values (objects by keys, in any order). Depth is bounded by the caller. */
function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  const ra = a as Record<string, unknown>;
  const rb = b as Record<string, unknown>;
  return ka.every((k) => Object.hasOwn(rb, k) && sameJson(ra[k], rb[k]));
}
