// Small helpers over plain JSON objects (Kubernetes objects as decoded JSON).
import { isObject as isJsonObject } from '../../json.js';

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

/** The one JSON-object guard (src/json.ts), narrowed to decoded-JSON values. */
export const isObject = isJsonObject as (v: unknown) => v is JsonObject;

/** Go's "unset": absent, null, or (for strings with omitempty) empty. */
export function isUnset(v: unknown): boolean {
  return v === undefined || v === null || v === '';
}

/** Set `obj[key]` when it is unset; returns the (possibly new) value. */
export function setDefault<T extends Json>(obj: JsonObject, key: string, value: T): Json {
  if (isUnset(obj[key])) obj[key] = value;
  return obj[key] as Json;
}

/** The object at `obj[key]`, created when absent (a Go non-pointer struct always exists). */
export function child(obj: JsonObject, key: string): JsonObject {
  const v = obj[key];
  if (isObject(v)) return v;
  const created: JsonObject = {};
  obj[key] = created;
  return created;
}

/** The object at `obj[key]` if it is one, else undefined (a nil pointer is left nil). */
export function maybeChild(obj: JsonObject, key: string): JsonObject | undefined {
  const v = obj[key];
  return isObject(v) ? v : undefined;
}

/** The object elements of the list at `obj[key]` (nothing when absent). */
export function objectsIn(obj: JsonObject | undefined, key: string): JsonObject[] {
  const v = obj?.[key];
  return Array.isArray(v) ? v.filter(isObject) : [];
}

export function deepClone<T>(v: T): T {
  return structuredClone(v);
}
