// JSON (as the API server decodes an object for CEL) → @bufbuild/cel input values. Why:
// the API server gives an integral JSON number the CEL type int, and CEL does no implicit
// int/double arithmetic (`object.spec.replicas + 1` is int + int there); a JS number is a
// CEL double here, so integers become bigint. Objects become Maps: CEL maps, whose
// missing keys `has()` tests.
//
// Lazily: an object becomes a JsonMap, which converts a field only when CEL reads it (and
// then once), so a rule pays for what it reads, not for the whole 10 KB object; an array
// is converted one level deep (its objects lazy in turn). The values are the ones an eager
// conversion gives — same keys in the same order, same conversions — only later.
import type { CelInput } from '@bufbuild/cel';

/**
 * What one evaluation converted, by JSON object or array: the bindings of several
 * activations (one per policy) over the same object, or a mutated object sharing its
 * unchanged parts with the request's, convert each part once. Only for objects not
 * modified while it is in use (evaluate.ts never modifies them: mutation is copy-on-write).
 */
export type CelCache = WeakMap<object, CelInput>;

/**
 * A JSON object as a CEL map (@bufbuild/cel takes a JS Map; its NativeMap reads it through
 * get, has, size, keys, values, entries and forEach, all answered here from the object).
 * The Map's own storage only memoises converted fields; iteration follows the object.
 */
class JsonMap extends Map<string, CelInput> {
  private keyList: string[] | undefined;

  constructor(
    private readonly obj: Record<string, unknown>,
    private readonly cache: CelCache | undefined,
  ) {
    super();
  }

  private fields(): string[] {
    return (this.keyList ??= Object.keys(this.obj));
  }

  override get(key: unknown): CelInput | undefined {
    if (typeof key !== 'string' || !Object.hasOwn(this.obj, key)) return undefined;
    let v = super.get(key);
    if (v === undefined) {
      v = toCel(this.obj[key], this.cache);
      super.set(key, v);
    }
    return v;
  }

  override has(key: unknown): boolean {
    return typeof key === 'string' && Object.hasOwn(this.obj, key);
  }

  override get size(): number {
    return this.fields().length;
  }

  override keys(): MapIterator<string> {
    return this.fields()[Symbol.iterator]() as MapIterator<string>;
  }

  override *values(): MapIterator<CelInput> {
    for (const k of this.fields()) yield this.get(k)!;
  }

  override *entries(): MapIterator<[string, CelInput]> {
    for (const k of this.fields()) yield [k, this.get(k)!];
  }

  override [Symbol.iterator](): MapIterator<[string, CelInput]> {
    return this.entries();
  }

  override forEach(
    fn: (value: CelInput, key: string, map: Map<string, CelInput>) => void,
    thisArg?: unknown,
  ): void {
    for (const k of this.fields()) fn.call(thisArg, this.get(k)!, k, this);
  }

  override set(): this {
    throw new TypeError('a JSON object converted for CEL is read-only');
  }

  override delete(): boolean {
    throw new TypeError('a JSON object converted for CEL is read-only');
  }

  override clear(): void {
    throw new TypeError('a JSON object converted for CEL is read-only');
  }
}

export function toCel(v: unknown, cache?: CelCache): CelInput {
  if (v === null || v === undefined) return null;
  if (typeof v === 'number') return Number.isInteger(v) ? BigInt(v) : v;
  if (typeof v === 'string' || typeof v === 'boolean' || typeof v === 'bigint') return v;
  if (typeof v !== 'object') return null;
  const known = cache?.get(v);
  if (known !== undefined) return known;
  const out: CelInput = Array.isArray(v)
    ? v.map((x) => toCel(x, cache))
    : new JsonMap(v as Record<string, unknown>, cache);
  cache?.set(v, out);
  return out;
}
