// Untrusted JSON is read field by field: this is the one guard for "a JSON object" (not
// null, not an array) that every reader of request bodies and objects uses.
export type JsonObject = Record<string, unknown>;

export const isObject = (v: unknown): v is JsonObject =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Whether a JSON value nests deeper than `max` levels of maps and lists. Recursive but
 * never more than `max` + 1 frames deep, so measuring depth cannot overflow the stack
 * itself (structuredClone and JSON.stringify overflow near 3,000 and 5,000 levels; the
 * API server accepts 10,000); it allocates nothing, as it runs on every review.
 */
export function nestsDeeperThan(value: unknown, max: number): boolean {
  return typeof value === 'object' && value !== null && deeper(value, 1, max);
}

function deeper(node: object, depth: number, max: number): boolean {
  if (depth > max) return true;
  if (Array.isArray(node)) {
    for (let i = 0; i < node.length; i++) {
      const child: unknown = node[i];
      if (typeof child === 'object' && child !== null && deeper(child, depth + 1, max)) return true;
    }
    return false;
  }
  for (const key in node) {
    const child: unknown = (node as JsonObject)[key];
    if (typeof child === 'object' && child !== null && deeper(child, depth + 1, max)) return true;
  }
  return false;
}

/**
 * A deep copy of a parsed JSON value (maps, lists, strings, numbers, booleans, null), the
 * same as structuredClone gives for such a value at a tenth of its cost. A `__proto__`
 * key stays an own property, as JSON.parse made it. Recursive: bound the depth first
 * (nestsDeeperThan).
 */
export function cloneJson<T>(value: T): T {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) {
    const out: unknown[] = new Array(value.length);
    for (let i = 0; i < value.length; i++) out[i] = cloneJson(value[i]);
    return out as T;
  }
  const out: JsonObject = {};
  for (const key in value) {
    const v = cloneJson((value as JsonObject)[key]);
    if (key === '__proto__') {
      Object.defineProperty(out, key, {
        value: v,
        enumerable: true,
        writable: true,
        configurable: true,
      });
    } else out[key] = v;
  }
  return out as T;
}
