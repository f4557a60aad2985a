// JSON (as the API server decodes an object for CEL) → @bufbuild/cel input values. Why:
// the API server gives an integral JSON number the CEL type int, and CEL does no implicit
// int/double arithmetic (`object.spec.replicas + 1` is int + int there); a JS number is a
// CEL double here, so integers become bigint. Objects become Maps: CEL maps, whose
// missing keys `has()` tests.
import type { CelInput } from '@bufbuild/cel';

export function toCel(v: unknown): CelInput {
  if (v === null || v === undefined) return null;
  if (typeof v === 'number') return Number.isInteger(v) ? BigInt(v) : v;
  if (typeof v === 'string' || typeof v === 'boolean' || typeof v === 'bigint') return v;
  if (Array.isArray(v)) return v.map(toCel);
  if (typeof v === 'object') {
    return new Map(Object.entries(v as Record<string, unknown>).map(([k, x]) => [k, toCel(x)]));
  }
  return null;
}
