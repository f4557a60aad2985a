// Untrusted JSON is read field by field: this is the one guard for "a JSON object" (not
// null, not an array) that every reader of request bodies and objects uses.
export type JsonObject = Record<string, unknown>;

export const isObject = (v: unknown): v is JsonObject =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Whether a JSON value nests deeper than `max` levels of maps and lists. Iterative, so
 * that measuring depth cannot overflow the stack itself (structuredClone and
 * JSON.stringify overflow near 3,000 and 5,000 levels; the API server accepts 10,000).
 */
export function nestsDeeperThan(value: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[value, 1]];
  for (let top = stack.pop(); top; top = stack.pop()) {
    const [node, depth] = top;
    if (typeof node !== 'object' || node === null) continue;
    if (depth > max) return true;
    for (const child of Array.isArray(node) ? node : Object.values(node)) {
      if (typeof child === 'object' && child !== null) stack.push([child, depth + 1]);
    }
  }
  return false;
}
