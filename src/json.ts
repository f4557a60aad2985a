// Untrusted JSON is read field by field: this is the one guard for "a JSON object" (not
// null, not an array) that every reader of request bodies and objects uses.
export type JsonObject = Record<string, unknown>;

export const isObject = (v: unknown): v is JsonObject =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
